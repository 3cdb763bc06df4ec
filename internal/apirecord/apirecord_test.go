package apirecord

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAPIRecord fails when an exported declaration of a public package
// differs from its record in api/: every change of the API is made on
// purpose, by regenerating the record, with its line in CHANGELOG.md.
func TestAPIRecord(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root, err := Root(wd)
	require.NoError(t, err)
	diff, err := Check(root)
	require.NoError(t, err)
	if diff != "" {
		t.Fatalf("the exported API differs from its record in api/:\n%s\n"+
			"If the change is meant, run `make api` (go run ./internal/cmd/apirecord -w), "+
			"commit api/, and say what changed in CHANGELOG.md under ## Unreleased.", diff)
	}
}

func TestDiff(t *testing.T) {
	recorded := map[string]string{
		"func A":               "func A(x int) error",
		"method (*T).M":        "func (t *T) M() bool",
		"type T":               "type T struct {\n\tN int\n}",
		"func Gone":            "func Gone()",
		"const NamespaceIndex": `const NamespaceIndex = "namespace"`,
	}
	tests := []struct {
		name string
		got  []Entry
		want string
	}{
		{
			name: "same",
			got: []Entry{
				{Decl: "func A(x int) error"}, {Decl: "func (t *T) M() bool"},
				{Decl: "type T struct {\n\tN int\n}"}, {Decl: "func Gone()"}, {Decl: `const NamespaceIndex = "namespace"`},
			},
		},
		{
			name: "added, removed, changed",
			got: []Entry{
				{Decl: "func A(x int64) error"}, {Decl: "func (t *T) M() bool"}, {Decl: "func (t *T) New(ctx context.Context)"},
				{Decl: "type T struct {\n\tN int\n\tS string\n}"}, {Decl: `const NamespaceIndex = "namespace"`},
			},
			want: "changed func A:\n\t- func A(x int) error\n\t+ func A(x int64) error\n" +
				"removed func Gone:\n\t- func Gone()\n" +
				"added method (*T).New:\n\t+ func (t *T) New(ctx context.Context)\n" +
				"changed type T:\n\t- type T struct {\n\t- \tN int\n\t- }\n\t+ type T struct {\n\t+ \tN int\n\t+ \tS string\n\t+ }\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Diff(recorded, tt.got))
		})
	}
}

// A record file reads back as the declarations it was written from.
func TestFormatParse(t *testing.T) {
	entries, err := Read("../..", "shard")
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	assert.Empty(t, Diff(Parse(Format("shard", entries)), entries))
}
