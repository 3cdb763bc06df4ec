package jsondec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// validCases are inputs valid and invalid, at the edges of JSON's grammar.
var validCases = []string{
	``, ` `, `null`, ` true `, `false`, `nul`, `nulll`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`,
	`1E-7`, `1e07`, `-1.25e+10`, `+1`, `0x1`, `1 2`, `""`, `"a`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\u00e9"`,
	`"\u00g9"`, `"\u12"`, `"\x"`, "\"\x01\"", "\"\x7f\"", "\"\xff\xfe\"", "\"é\"", `[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`,
	`[1,[2,[3]]]`, `[`, `]`, `{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`,
	`{"a":{"b":[{"c":null}]}}`, `{"a":1}}`, `[1]]`, `{"a":[1}`, `[{"a":1]}`, "\t\r\n{\"a\" : [ 1 , 2 ] }\n", `{"":""}`,
	`{"a":1,"a":2}`, "[1,\n2]", `"\ud800"`, `[-]`, `[-a]`, `[1e5x]`, `{"a":tru}`, `{"a":"b"`, `{"a"`, `{"a":`,
}

// TestValidMatchesEncodingJSON checks Valid against json.Valid on the
// cases, on every prefix of them, and at the nesting limit.
func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		for n := range len(c) + 1 {
			require.Equal(t, json.Valid([]byte(c[:n])), Valid([]byte(c[:n])), "%q", c[:n])
		}
	}
	for _, depth := range []int{maxNesting - 1, maxNesting, maxNesting + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
			for _, inner := range []string{"1", "[]", "{}"} {
				b := []byte(strings.Repeat(open, depth) + inner + strings.Repeat(closer, depth))
				require.Equal(t, json.Valid(b), Valid(b), "depth %d of %s around %s", depth, open, inner)
			}
		}
	}
}

// FuzzValid checks Valid against json.Valid on arbitrary bytes.
func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Add([]byte(repeatingWidget))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid: %v", b, got, want)
		}
	})
}
