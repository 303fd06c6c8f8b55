package rpc

import (
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// toPBRules writes a schema's rules as AttachDocument answers them.
func toPBRules(rules []database.Rule) []*api.Rule {
	if len(rules) == 0 {
		return nil
	}
	out := make([]*api.Rule, len(rules))
	for i, r := range rules {
		out[i] = &api.Rule{Path: r.Path, Type: r.Type}
		for _, n := range r.TreeNodes {
			out[i].TreeNodes = append(out[i].TreeNodes, &api.TreeNodeRule{
				NodeType: n.NodeType, Content: n.Content, Marks: n.Marks, Group: n.Group,
			})
		}
	}
	return out
}
