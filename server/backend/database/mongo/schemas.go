package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// colSchemas holds the projects' schemas, upstream's collection name.
const colSchemas = "schemas"

// schemaRecord is a schema version in the schemas collection, with
// upstream's field names.
type schemaRecord struct {
	ID        primitive.ObjectID `bson:"_id"`
	ProjectID string             `bson:"project_id"`
	Name      string             `bson:"name"`
	Version   int                `bson:"version"`
	Body      string             `bson:"body"`
	Rules     []ruleRecord       `bson:"rules"`
	CreatedAt time.Time          `bson:"created_at"`
}

type ruleRecord struct {
	Path      string           `bson:"path"`
	Type      string           `bson:"type"`
	TreeNodes []treeNodeRecord `bson:"tree_nodes,omitempty"`
}

type treeNodeRecord struct {
	NodeType string `bson:"node_type"`
	Content  string `bson:"content"`
	Marks    string `bson:"marks"`
	Group    string `bson:"group"`
}

func (r *schemaRecord) info() *database.SchemaInfo {
	s := &database.SchemaInfo{
		ID: r.ID.Hex(), ProjectID: r.ProjectID, Name: r.Name, Version: r.Version, Body: r.Body,
		Rules: make([]database.Rule, len(r.Rules)), CreatedAt: r.CreatedAt.UTC(),
	}
	for i, rr := range r.Rules {
		s.Rules[i] = database.Rule{Path: rr.Path, Type: rr.Type}
		for _, n := range rr.TreeNodes {
			s.Rules[i].TreeNodes = append(s.Rules[i].TreeNodes, database.TreeNodeRule(n))
		}
	}
	return s
}

func (db *DB) ensureSchemaIndexes(ctx context.Context) error {
	col := db.db.Collection(colSchemas)
	const name = "project_name_version_unique"
	if db.hasIndex(ctx, col, name) {
		return nil
	}
	model := mongo.IndexModel{
		Keys:    bson.D{{Key: "project_id", Value: 1}, {Key: "name", Value: 1}, {Key: "version", Value: 1}},
		Options: options.Index().SetName(name).SetUnique(true),
	}
	if _, err := col.Indexes().CreateOne(ctx, model); err != nil && !db.hasIndex(ctx, col, name) {
		return wrapErr(fmt.Sprintf("mongo: create index %s of %s", name, colSchemas), err)
	}
	return nil
}

// CreateSchema implements database.Schemas.
func (db *DB) CreateSchema(ctx context.Context, s *database.SchemaInfo) (*database.SchemaInfo, error) {
	r := &schemaRecord{
		ID: primitive.NewObjectID(), ProjectID: s.ProjectID, Name: s.Name, Version: s.Version, Body: s.Body,
		Rules: make([]ruleRecord, len(s.Rules)), CreatedAt: now(),
	}
	for i, rule := range s.Rules {
		r.Rules[i] = ruleRecord{Path: rule.Path, Type: rule.Type}
		for _, n := range rule.TreeNodes {
			r.Rules[i].TreeNodes = append(r.Rules[i].TreeNodes, treeNodeRecord(n))
		}
	}
	if _, err := db.db.Collection(colSchemas).InsertOne(ctx, r); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return nil, fmt.Errorf("create schema %s: %w", s.Key(), database.ErrSchemaAlreadyExists)
		}
		return nil, wrapErr(fmt.Sprintf("create schema %s", s.Key()), err)
	}
	return r.info(), nil
}

// FindSchema implements database.Schemas.
func (db *DB) FindSchema(ctx context.Context, projectID, name string, version int) (*database.SchemaInfo, error) {
	key := database.SchemaKey(name, version)
	var r schemaRecord
	err := db.db.Collection(colSchemas).FindOne(ctx, bson.D{
		{Key: "project_id", Value: projectID}, {Key: "name", Value: name}, {Key: "version", Value: version},
	}).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("find schema %s: %w", key, database.ErrSchemaNotFound)
	}
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("find schema %s", key), err)
	}
	return r.info(), nil
}

// findSchemas returns the project's schemas matching filter, ordered by name
// and then newest version first.
func (db *DB) findSchemas(ctx context.Context, op string, filter bson.D) ([]*database.SchemaInfo, error) {
	cur, err := db.db.Collection(colSchemas).Find(ctx, filter,
		options.Find().SetSort(bson.D{{Key: "name", Value: 1}, {Key: "version", Value: -1}}))
	if err != nil {
		return nil, wrapErr(op, err)
	}
	var recs []schemaRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, wrapErr(op, err)
	}
	out := make([]*database.SchemaInfo, len(recs))
	for i := range recs {
		out[i] = recs[i].info()
	}
	return out, nil
}

// FindSchemaVersions implements database.Schemas.
func (db *DB) FindSchemaVersions(ctx context.Context, projectID, name string) ([]*database.SchemaInfo, error) {
	op := fmt.Sprintf("find versions of schema %q", name)
	out, err := db.findSchemas(ctx, op, bson.D{{Key: "project_id", Value: projectID}, {Key: "name", Value: name}})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", op, database.ErrSchemaNotFound)
	}
	return out, nil
}

// ListSchemas implements database.Schemas. A project has few schemas: they
// are read whole and the newest version of each name kept.
func (db *DB) ListSchemas(ctx context.Context, projectID string) ([]*database.SchemaInfo, error) {
	all, err := db.findSchemas(ctx, "list schemas", bson.D{{Key: "project_id", Value: projectID}})
	if err != nil {
		return nil, err
	}
	out := make([]*database.SchemaInfo, 0, len(all))
	for _, s := range all {
		if len(out) == 0 || out[len(out)-1].Name != s.Name {
			out = append(out, s)
		}
	}
	return out, nil
}

// RemoveSchema implements database.Schemas.
func (db *DB) RemoveSchema(ctx context.Context, projectID, name string, version int) error {
	key := database.SchemaKey(name, version)
	res, err := db.db.Collection(colSchemas).DeleteOne(ctx, bson.D{
		{Key: "project_id", Value: projectID}, {Key: "name", Value: name}, {Key: "version", Value: version},
	})
	if err != nil {
		return wrapErr(fmt.Sprintf("remove schema %s", key), err)
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("remove schema %s: %w", key, database.ErrSchemaNotFound)
	}
	return nil
}

// SetDocumentSchema implements database.Schemas.
func (db *DB) SetDocumentSchema(ctx context.Context, docID, schemaKey string) error {
	oid, err := primitive.ObjectIDFromHex(docID)
	if err != nil {
		return fmt.Errorf("set schema of document %q: %w", docID, database.ErrDocumentNotFound)
	}
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "schema", Value: schemaKey}}}}
	if schemaKey == "" {
		update = bson.D{{Key: "$unset", Value: bson.D{{Key: "schema", Value: ""}}}}
	}
	res, err := db.documents.UpdateOne(ctx, bson.D{{Key: "_id", Value: oid}}, update)
	if err != nil {
		return wrapErr(fmt.Sprintf("set schema of document %s", docID), err)
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("set schema of document %s: %w", docID, database.ErrDocumentNotFound)
	}
	return nil
}

// SchemaInUse implements database.Schemas.
func (db *DB) SchemaInUse(ctx context.Context, projectID, schemaKey string) (bool, error) {
	n, err := db.documents.CountDocuments(ctx, bson.D{
		{Key: "project_id", Value: projectID}, {Key: "schema", Value: schemaKey},
		{Key: "removed_at", Value: bson.D{{Key: "$exists", Value: false}}},
	}, options.Count().SetLimit(1))
	if err != nil {
		return false, wrapErr(fmt.Sprintf("find documents of schema %s", schemaKey), err)
	}
	return n > 0, nil
}
