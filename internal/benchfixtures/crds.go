package benchfixtures

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
)

// gatewayCRDs are the four CustomResourceDefinitions of Gateway API's
// standard install (Copyright The Kubernetes Authors, Apache License
// 2.0), as k8s.io/apiextensions-apiserver's tests carry them: a JSON
// array, gzipped.
//
//go:embed testdata/gateway-api-crds.json.gz
var gatewayCRDs []byte

// CRDs returns n CustomResourceDefinitions in JSON, about 70 KB each,
// made from Gateway API's four: copy k of each has a name and a group of
// its own, and its own property names and descriptions, so that two
// CRDs' schemas share no more than JSON Schema's keywords and the small
// schemas every one repeats ({"type": "string"}). Real CRDs of one
// cluster share more (metadata, conditions, the same projects' types):
// these are the hard case for a decoder that shares equal values.
func CRDs(n int) ([][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gatewayCRDs))
	if err != nil {
		return nil, fmt.Errorf("the Gateway API CRDs: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("the Gateway API CRDs: %w", err)
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(raw, &docs); err != nil {
		return nil, fmt.Errorf("the Gateway API CRDs: %w", err)
	}
	out := make([][]byte, n)
	for k := range out {
		dec := json.NewDecoder(bytes.NewReader(docs[k%len(docs)]))
		dec.UseNumber()
		var crd map[string]any
		if err := dec.Decode(&crd); err != nil {
			return nil, fmt.Errorf("the Gateway API CRDs: %w", err)
		}
		spec := crd["spec"].(map[string]any)
		group := fmt.Sprintf("g%d.%s", k, spec["group"])
		spec["group"] = group
		plural := spec["names"].(map[string]any)["plural"]
		crd["metadata"].(map[string]any)["name"] = fmt.Sprintf("%s.%s", plural, group)
		makeOwn(crd, k)
		if out[k], err = json.Marshal(crd); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// makeOwn gives the schemas in v the property names and descriptions of
// copy k.
func makeOwn(v any, k int) {
	switch v := v.(type) {
	case map[string]any:
		if d, ok := v["description"].(string); ok {
			v["description"] = fmt.Sprintf("%s (%d)", d, k)
		}
		if props, ok := v["properties"].(map[string]any); ok {
			own := make(map[string]any, len(props))
			for name, p := range props {
				own[fmt.Sprintf("%s%d", name, k)] = p
			}
			v["properties"] = own
		}
		for _, e := range v {
			makeOwn(e, k)
		}
	case []any:
		for _, e := range v {
			makeOwn(e, k)
		}
	}
}
