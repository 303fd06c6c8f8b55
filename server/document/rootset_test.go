package document

import (
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/document/crdt"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

func TestRootSetChange(t *testing.T) {
	d := New()
	actor := crdt.ActorID{1, 2, 3}
	root, err := yson.ParseObject(`{"title":"hi","n":Int(3),"l":Long(4),"f":1.5,"ok":true,"none":null,` +
		`"o":{"a":[Int(1),{"b":"c"},[true]]},"cnt":Counter(Int(2)),"t":Text([{"val":"ab"},{"val":"c","attrs":{"bold":"true"}}]),` +
		`"tree":Tree({"type":"doc","children":[{"type":"p","attrs":{"x":"1"},"children":[{"type":"text","value":"hey"}]}]})}`)
	require.NoError(t, err)
	ch, err := d.RootSetChange(root, actor)
	require.NoError(t, err)
	require.NoError(t, d.ApplyPushed([]*api.Change{ch}))
	assert.JSONEq(t, `{"cnt":2,"f":1.5,"l":4,"n":3,"none":null,"o":{"a":[1,{"b":"c"},[true]]},"ok":true,`+
		`"t":[{"val":"ab"},{"attrs":{"bold":true},"val":"c"}],`+
		`"title":"hi","tree":{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"hey"}],"attributes":{"x":1}}]}}`, d.JSON())

	// A second update wins over the first: its lamport is after every
	// change the document applied.
	again, err := yson.ParseObject(`{"title":"bye"}`)
	require.NoError(t, err)
	ch2, err := d.RootSetChange(again, crdt.ActorID{9})
	require.NoError(t, err)
	require.NoError(t, d.ApplyPushed([]*api.Change{ch2}))
	assert.Contains(t, d.JSON(), `"title":"bye"`)
	assert.True(t, d.Covers(d.VersionVector()))
}
