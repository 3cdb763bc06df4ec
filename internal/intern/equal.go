package intern

import (
	"hash/maphash"
	"unsafe"
)

// hashValue returns a hash of the content of the value of node n at p:
// of what it holds, not where, so that equal values decoded apart hash
// alike. Opaque values are hashed as their bytes.
func hashValue(n *node, p unsafe.Pointer, seed maphash.Seed) uint64 {
	switch n.kind {
	case opaque:
		return maphash.Bytes(seed, unsafe.Slice((*byte)(p), n.size))
	case str:
		return maphash.String(seed, *(*string)(p))
	case strct:
		h := uint64(len(n.fields))
		for _, f := range n.fields {
			h = mix(h, hashValue(f.n, unsafe.Add(p, f.off), seed))
		}
		return h
	case array:
		h := uint64(n.len)
		for i := range n.len {
			h = mix(h, hashValue(n.elem, unsafe.Add(p, uintptr(i)*n.elem.size), seed))
		}
		return h
	case slice:
		s := (*sliceHeader)(p)
		if n.elem.kind == opaque {
			return mix(uint64(s.len), maphash.Bytes(seed, unsafe.Slice((*byte)(s.data), uintptr(s.len)*n.elem.size)))
		}
		h := uint64(s.len)
		for i := range s.len {
			h = mix(h, hashValue(n.elem, unsafe.Add(s.data, uintptr(i)*n.elem.size), seed))
		}
		return h
	case pointer:
		ptr := *(*unsafe.Pointer)(p)
		if ptr == nil {
			return 0
		}
		return mix(1, hashValue(n.elem, ptr, seed))
	case mapping:
		return n.ops.hash(n, p, seed)
	}
	return 0
}

// mix combines hash h with x, in an order-dependent way.
func mix(h, x uint64) uint64 {
	h ^= x
	h *= 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// equal reports whether the values of node n at a and b are equal in
// content. Opaque values are equal if their bytes are: two equal values
// whose padding or pointers differ are taken for different, which costs
// sharing, never correctness.
func equal(n *node, a, b unsafe.Pointer) bool {
	if a == b {
		return true
	}
	switch n.kind {
	case opaque:
		return string(unsafe.Slice((*byte)(a), n.size)) == string(unsafe.Slice((*byte)(b), n.size))
	case str:
		return *(*string)(a) == *(*string)(b)
	case strct:
		for _, f := range n.fields {
			if !equal(f.n, unsafe.Add(a, f.off), unsafe.Add(b, f.off)) {
				return false
			}
		}
		return true
	case array:
		for i := range n.len {
			off := uintptr(i) * n.elem.size
			if !equal(n.elem, unsafe.Add(a, off), unsafe.Add(b, off)) {
				return false
			}
		}
		return true
	case slice:
		x, y := (*sliceHeader)(a), (*sliceHeader)(b)
		if x.len != y.len {
			return false
		}
		if x.data == y.data {
			return true
		}
		if n.elem.kind == opaque {
			size := uintptr(x.len) * n.elem.size
			return string(unsafe.Slice((*byte)(x.data), size)) == string(unsafe.Slice((*byte)(y.data), size))
		}
		for i := range x.len {
			off := uintptr(i) * n.elem.size
			if !equal(n.elem, unsafe.Add(x.data, off), unsafe.Add(y.data, off)) {
				return false
			}
		}
		return true
	case pointer:
		x, y := *(*unsafe.Pointer)(a), *(*unsafe.Pointer)(b)
		if x == nil || y == nil {
			return x == y
		}
		return equal(n.elem, x, y)
	case mapping:
		return *(*unsafe.Pointer)(a) == *(*unsafe.Pointer)(b) || n.ops.equal(n, a, b)
	}
	return false
}
