package shard_test

import (
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/shard"
)

// Hash is the hash of apimachinery's shard selectors, which the API server
// evaluates: FNV-1a 64 over the field's bytes.
func TestHashMatchesAPIMachinery(t *testing.T) {
	for _, v := range []string{"", "a", "default", "0a6c4e5e-1f0b-4c1e-9c53-3f1c1c7a1b2d", "ünïcödé", strings.Repeat("x", 300)} {
		obj := &metav1.ObjectMeta{UID: types.UID(v), Namespace: v}
		want := fnv.New64a()
		want.Write([]byte(v))
		for _, field := range []shard.Field{shard.ByUID, shard.ByNamespace} {
			got := shard.Hash(field, obj)
			assert.Equal(t, want.Sum64(), got, "%s of %q", field, v)
			assert.Equal(t, apisharding.HashField(v), fmt.Sprintf("%016x", got), "%s of %q", field, v)
		}
	}
}

func TestSplit(t *testing.T) {
	for n := 1; n <= 7; n++ {
		rs := shard.Split(n)
		require.Len(t, rs, n)
		assert.Zero(t, rs[0].Start, "n=%d starts at 0", n)
		assert.Zero(t, rs[n-1].End, "n=%d ends at 2^64", n)
		for i := 1; i < n; i++ {
			assert.Equal(t, rs[i-1].End, rs[i].Start, "n=%d: ranges adjoin", n)
			// Each range is within one of 2^64/n.
			size := rs[i].Start - rs[i-1].Start
			assert.InDelta(t, math.Exp2(64)/float64(n), float64(size), 2, "n=%d", n)
		}
	}
	assert.Nil(t, shard.Split(0))
	assert.Equal(t, []shard.Range{{}}, shard.Split(1), "one range: the whole space")
}

func TestOf(t *testing.T) {
	halves := shard.Split(2)
	assert.Equal(t, shard.Shard{Field: shard.ByNamespace, Ranges: halves[1:2]}, shard.Of(shard.ByNamespace, 1, 2))
	assert.Empty(t, shard.Of(shard.ByUID, 2, 2).Ranges, "no shard 2 of 2")
	assert.Empty(t, shard.Of(shard.ByUID, -1, 2).Ranges, "no shard -1 of 2")
}

func TestContains(t *testing.T) {
	const half = 1 << 63
	obj := &metav1.ObjectMeta{UID: "0a6c4e5e-1f0b-4c1e-9c53-3f1c1c7a1b2d", Namespace: "default"}
	for _, field := range []shard.Field{shard.ByUID, shard.ByNamespace} {
		h := shard.Hash(field, obj)
		in := 0
		for i := range 2 {
			if shard.Of(field, i, 2).Contains(obj) {
				in++
				assert.Equal(t, i == 1, h >= half, "%s: shard %d of 2 holds hash %#x", field, i, h)
			}
		}
		assert.Equal(t, 1, in, "%s: in exactly one half", field)
		assert.True(t, shard.Shard{Field: field, Ranges: []shard.Range{{Start: h, End: h + 1}}}.Contains(obj))
		assert.False(t, shard.Shard{Field: field}.Contains(obj), "no ranges select nothing")
	}
}

func TestSelector(t *testing.T) {
	const half, quarter = 1 << 63, 1 << 62
	tests := []struct {
		name string
		s    shard.Shard
		want string
	}{
		{"whole space", shard.Shard{Ranges: []shard.Range{{}}},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{"lower half", shard.Of(shard.ByUID, 0, 2),
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"},
		{"upper half by namespace", shard.Of(shard.ByNamespace, 1, 2),
			"shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"},
		{"adjacent ranges merge", shard.Shard{Ranges: []shard.Range{{Start: quarter, End: half}, {Start: 0, End: quarter}}},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"},
		{"overlapping ranges merge, others sorted", shard.Shard{Ranges: []shard.Range{
			{Start: half + quarter, End: 0}, {Start: 0, End: half}, {Start: 1, End: 2}}},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || " +
				"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"},
		{"no ranges", shard.Shard{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.s.Selector())
			if tt.want == "" {
				return
			}
			parsed, err := shard.Parse(tt.want)
			require.NoError(t, err)
			assert.Equal(t, tt.want, parsed.Selector(), "round trip")
		})
	}
}

func TestCanonical(t *testing.T) {
	const half, quarter = 1 << 63, 1 << 62
	tests := []struct {
		name string
		s    shard.Shard
		want shard.Shard
	}{
		{"empty", shard.Shard{}, shard.Shard{Field: shard.ByUID}},
		{"field kept", shard.Shard{Field: shard.ByNamespace, Ranges: []shard.Range{{Start: 1, End: 2}}},
			shard.Shard{Field: shard.ByNamespace, Ranges: []shard.Range{{Start: 1, End: 2}}}},
		{"adjacent merge", shard.Shard{Ranges: []shard.Range{{Start: quarter, End: half}, {Start: 0, End: quarter}}},
			shard.Shard{Field: shard.ByUID, Ranges: []shard.Range{{Start: 0, End: half}}}},
		{"contained dropped", shard.Shard{Ranges: []shard.Range{{Start: 1, End: 2}, {Start: 0, End: half}}},
			shard.Shard{Field: shard.ByUID, Ranges: []shard.Range{{Start: 0, End: half}}}},
		{"after the whole space", shard.Shard{Ranges: []shard.Range{{}, {Start: half, End: half + quarter}}},
			shard.Shard{Field: shard.ByUID, Ranges: []shard.Range{{}}}},
		{"gap kept", shard.Shard{Ranges: []shard.Range{{Start: half, End: 0}, {Start: 0, End: quarter}}},
			shard.Shard{Field: shard.ByUID, Ranges: []shard.Range{{Start: 0, End: quarter}, {Start: half, End: 0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := shard.Shard{Field: tt.s.Field, Ranges: append([]shard.Range(nil), tt.s.Ranges...)}
			assert.Equal(t, tt.want, tt.s.Canonical())
			assert.Equal(t, before, tt.s, "s is not modified")
		})
	}
}

func TestValidate(t *testing.T) {
	assert.NoError(t, shard.Shard{}.Validate())
	assert.NoError(t, shard.Of(shard.ByNamespace, 0, 3).Validate())
	assert.NoError(t, shard.Shard{Ranges: []shard.Range{{Start: 5, End: 0}}}.Validate(), "to the end of the space")
	assert.ErrorContains(t, shard.Shard{Field: "metadata.name"}.Validate(), "shard field")
	assert.ErrorContains(t, shard.Shard{Ranges: []shard.Range{{Start: 5, End: 5}}}.Validate(), "empty")
	assert.ErrorContains(t, shard.Shard{Ranges: []shard.Range{{Start: 5, End: 4}}}.Validate(), "empty")
}

func TestParseRejects(t *testing.T) {
	for _, sel := range []string{
		"",
		"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", // the server wants 16 digits
		"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && true",
	} {
		_, err := shard.Parse(sel)
		assert.Error(t, err, "%q", sel)
	}
}

func TestFilterString(t *testing.T) {
	for f, want := range map[shard.Filter]string{
		shard.FilterNone: "none", shard.FilterUnknown: "unknown", shard.FilterServer: "server", shard.FilterClient: "client",
	} {
		assert.Equal(t, want, f.String())
	}
	assert.Equal(t, shard.FilterNone, shard.Status{}.Filter, "the zero Status is not sharded")
}
