package watchstream

import (
	"bytes"
	"fmt"
	"mime"

	"k8s.io/apimachinery/pkg/runtime"
)

// Format is the encoding of a response, which its Content-Type names.
type Format int

const (
	// Sniffed is the format of a response whose Content-Type the client
	// did not see (a clientset whose transport the library did not make):
	// its first bytes tell it (see Sniff).
	Sniffed Format = iota
	Protobuf
	JSON
	// CBOR is decoded by client-go's codecs, which know it when the
	// client enables client-go's ClientsAllowCBOR feature.
	CBOR
)

func (f Format) String() string {
	switch f {
	case Protobuf:
		return "protobuf"
	case JSON:
		return "JSON"
	case CBOR:
		return "CBOR"
	}
	return "unknown"
}

// FormatOf returns the format of a response whose Content-Type is
// contentType, Sniffed if it is "". A media type that is none of
// kube-apiserver's (protobuf, JSON, CBOR) is an error naming it.
func FormatOf(contentType string) (Format, error) {
	if contentType == "" {
		return Sniffed, nil
	}
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return Sniffed, fmt.Errorf("the response's content type %q does not parse: %w", contentType, err)
	}
	switch media {
	case runtime.ContentTypeProtobuf:
		return Protobuf, nil
	case runtime.ContentTypeJSON:
		return JSON, nil
	case runtime.ContentTypeCBOR, runtime.ContentTypeCBORSequence:
		return CBOR, nil
	}
	return Sniffed, fmt.Errorf("the response's content type %q is none the library decodes (protobuf, JSON, CBOR)", contentType)
}

// cborTag starts every CBOR object kube-apiserver encodes: the
// self-described CBOR tag (RFC 8949, 3.4.6).
var cborTag = []byte{0xd9, 0xd9, 0xf7}

// Sniff returns the format of a response from its first bytes, as the
// API server encodes them: a JSON object, a CBOR object (self-described),
// else protobuf (a list's magic prefix, or a watch frame's length).
func Sniff(b []byte) Format {
	switch {
	case len(b) > 0 && b[0] == '{':
		return JSON
	case bytes.HasPrefix(b, cborTag):
		return CBOR
	}
	return Protobuf
}
