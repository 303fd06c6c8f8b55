package admin

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// statsRange returns the days a date range covers, as upstream reads it:
// from the range's start to the end of today (UTC days).
func statsRange(r api.GetProjectStatsRequest_DateRange, now time.Time) (from, to time.Time, err error) {
	today := now.UTC().Truncate(24 * time.Hour)
	to = today.AddDate(0, 0, 1)
	switch r {
	case api.GetProjectStatsRequest_DATE_RANGE_LAST_1W:
		from = today.AddDate(0, 0, -7)
	case api.GetProjectStatsRequest_DATE_RANGE_LAST_4W:
		from = today.AddDate(0, 0, -28)
	case api.GetProjectStatsRequest_DATE_RANGE_LAST_3M:
		from = today.AddDate(0, -3, 0)
	case api.GetProjectStatsRequest_DATE_RANGE_LAST_12M:
		from = today.AddDate(0, -12, 0)
	default:
		return from, to, fmt.Errorf("date range %v: want the last week, 4 weeks, 3 months or 12 months", r)
	}
	return from, to, nil
}

// dailyPoints counts the distinct keys active on each day of [from, to),
// and over the whole range. Points are at each day's start, in Unix
// seconds, as the dashboard reads them.
func dailyPoints(acts []database.Activity, from, to time.Time) ([]*api.MetricPoint, int32) {
	perDay := map[int64]map[string]bool{}
	all := map[string]bool{}
	for _, a := range acts {
		day := a.At.UTC().Truncate(24 * time.Hour).Unix()
		if perDay[day] == nil {
			perDay[day] = map[string]bool{}
		}
		perDay[day][a.Key] = true
		all[a.Key] = true
	}
	var points []*api.MetricPoint
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		points = append(points, &api.MetricPoint{Timestamp: d.Unix(), Value: int32(len(perDay[d.Unix()]))})
	}
	return points, int32(len(all))
}

// GetProjectStats reports the project's documents and clients and their
// activity per day over the range, from this server's own records. It
// needs the project's secret key, as upstream's. Channel and session
// series, which upstream reads from its analytics warehouse, are zeros:
// this server records no channel history.
func (s *Service) GetProjectStats(ctx context.Context, req *connect.Request[api.GetProjectStatsRequest]) (*connect.Response[api.GetProjectStatsResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedProjectKey())
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	from, to, err := statsRange(req.Msg.DateRange, now)
	if err != nil {
		return nil, invalidArgument(err)
	}
	act, err := s.db.ProjectActivity(ctx, c.Project.ID, from, to)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	// A client's key names its user, as upstream's active users do.
	users, usersCount := dailyPoints(act.ActiveClients, from, to)
	byID := make([]database.Activity, len(act.ActiveClients))
	for i, a := range act.ActiveClients {
		byID[i] = database.Activity{Key: fmt.Sprint(i), At: a.At}
	}
	clients, clientsCount := dailyPoints(byID, from, to)
	docs, docsCount := dailyPoints(act.ActiveDocuments, from, to)
	zeros, _ := dailyPoints(nil, from, to)
	return connect.NewResponse(&api.GetProjectStatsResponse{
		DocumentsCount:         act.Documents,
		ClientsCount:           act.Clients,
		ActiveUsers:            users,
		ActiveUsersCount:       usersCount,
		ActiveClients:          clients,
		ActiveClientsCount:     clientsCount,
		ActiveDocuments:        docs,
		ActiveDocumentsCount:   docsCount,
		ActiveChannels:         zeros,
		Sessions:               zeros,
		PeakSessionsPerChannel: zeros,
		StatsUpdatedAt:         timestamppb.New(now),
	}), nil
}
