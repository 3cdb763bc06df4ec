// Package wording builds the English of the library's messages: the
// article before a Go type or a word, the possessive of a name, a count
// with its noun, so that a message reads "an int", "containers'" and
// "1 object" rather than "a int", "containers's" and "1 objects".
package wording

import (
	"strconv"
	"strings"
)

// A returns s after its indefinite article, "a" or "an", chosen by how s
// reads aloud: "an int", "an object", "a uint64", "a *v1.Pod" (a
// pointer), "a []string", "an \"EventList\"" (quotes are not read).
func A(s string) string {
	return article(s) + " " + s
}

// article returns "a" or "an" for s.
func article(s string) string {
	w := strings.ToLower(strings.TrimLeft(s, `"'`+"`"))
	if w == "" {
		return "a"
	}
	switch w[0] {
	case 'a', 'e', 'i', 'o':
		return "an"
	case 'u':
		// "uint" and "unique" read with a consonant, "unstructured" and
		// "unsafe" with a vowel.
		if strings.HasPrefix(w, "uint") || strings.HasPrefix(w, "uni") || strings.HasPrefix(w, "use") || strings.HasPrefix(w, "usu") {
			return "a"
		}
		return "an"
	}
	return "a"
}

// Possessive returns the possessive of name: "spec's", and "containers'"
// for a name that ends in s.
func Possessive(name string) string {
	if strings.HasSuffix(name, "s") {
		return name + "'"
	}
	return name + "'s"
}

// Count returns n and noun, in the plural (noun and an s) unless n is 1:
// "1 object", "0 objects", "200 objects".
func Count(n int, noun string) string {
	return CountOf(n, noun, noun+"s")
}

// CountOf is Count for a noun whose plural is not its singular and an s.
func CountOf(n int, singular, plural string) string {
	if n == 1 {
		return "1 " + singular
	}
	return strconv.Itoa(n) + " " + plural
}
