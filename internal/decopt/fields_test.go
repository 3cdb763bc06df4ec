package decopt

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	A string `json:"a"`
	B int    `json:"b,omitempty"`
}

type shallow struct {
	inner
	B   string `json:"b"` // shadows inner.B
	C   bool
	D   int `json:"-"`
	e   int
	Ptr *inner `json:"ptr"`
}

type pointerEmbed struct {
	*inner
	Z int `json:"z"`
}

type Left struct {
	X int `json:"x"`
}
type Right struct {
	X string `json:"x"`
}

// conflicting embeds Left and Right, whose fields X are both named "x" (a
// struct that go vet would refuse to see written out).
var conflicting = reflect.StructOf([]reflect.StructField{
	{Name: "Left", Type: reflect.TypeFor[Left](), Anonymous: true},
	{Name: "Right", Type: reflect.TypeFor[Right](), Anonymous: true},
	{Name: "Y", Type: reflect.TypeFor[int](), Tag: `json:"y"`},
})

func TestFields(t *testing.T) {
	names := func(fs []Field) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.JSON+"@"+f.GoPath)
		}
		return out
	}
	refusePointers := func(sf reflect.StructField, goPath string) (bool, error) {
		if sf.Type.Kind() == reflect.Pointer {
			return false, errors.New(goPath + ": pointer")
		}
		return true, nil
	}
	for _, tc := range []struct {
		name    string
		t       reflect.Type
		inline  Inline
		want    []string
		wantErr string
	}{
		{"embedded struct read inline, shallower field wins", reflect.TypeFor[shallow](), InlineAll,
			[]string{"a@s.inner.A", "b@s.B", "C@s.C", "ptr@s.Ptr"}, ""},
		{"embedded pointer followed", reflect.TypeFor[pointerEmbed](), InlineAll,
			[]string{"a@s.inner.A", "b@s.inner.B", "z@s.Z"}, ""},
		{"embedded pointer refused", reflect.TypeFor[pointerEmbed](), refusePointers, nil, "s.inner: pointer"},
		{"embedded struct left out", reflect.TypeFor[shallow](), func(reflect.StructField, string) (bool, error) { return false, nil },
			[]string{"b@s.B", "C@s.C", "ptr@s.Ptr"}, ""},
		{"two of one name at one depth", conflicting, InlineAll,
			[]string{"x@s.Left.X", "y@s.Y"}, `s.Left.X and s.Right.X are both named "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := Fields(tc.t, "s", tc.inline)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, names(fs))
		})
	}
	fs, err := Fields(reflect.TypeFor[shallow](), "s", InlineAll)
	require.NoError(t, err)
	assert.Equal(t, reflect.TypeFor[shallow]().Field(0).Offset+reflect.TypeFor[inner]().Field(0).Offset, fs[0].Offset, "offset through the embedded struct")
	assert.Equal(t, 1, fs[0].Depth)
}
