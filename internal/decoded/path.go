package decoded

import (
	"slices"
	"strconv"
	"strings"
)

// FieldPath is the field path of a decoding error, in JSON names, such as
// spec.containers[2].image, built as the error unwinds from where it
// happened: innermost first. The zero FieldPath is empty.
type FieldPath struct {
	rev []string // the segments, innermost first
}

// Field adds field (or map key) name, outside those added before.
func (p *FieldPath) Field(name string) { p.rev = append(p.rev, "."+name) }

// Element adds element k of an array, outside those added before.
func (p *FieldPath) Element(k int) { p.rev = append(p.rev, "["+strconv.Itoa(k)+"]") }

// String returns the path, outermost first, such as spec.items[2].name.
func (p *FieldPath) String() string {
	var b strings.Builder
	for _, s := range slices.Backward(p.rev) {
		b.WriteString(s)
	}
	return strings.TrimPrefix(b.String(), ".")
}
