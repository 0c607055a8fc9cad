package persistence

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// A search of the posts list reads every post of the user, so it reads only what it matches
// on: the content, found in the stored record without decoding the rest of it.

// contentMatcher tells whether a stored post's content holds a needle, ignoring case as
// strings.ToLower does. It keeps a buffer between posts: one per search.
type contentMatcher struct {
	needle []byte // lower case
	buf    []byte
}

func newContentMatcher(search string) *contentMatcher {
	return &contentMatcher{needle: []byte(strings.ToLower(search))}
}

// match reports whether the stored post raw's content holds the needle.
func (m *contentMatcher) match(raw []byte) (bool, error) {
	content, ok := storedContent(raw)
	if !ok {
		var p Post
		if err := Decode(raw, &p); err != nil {
			return false, err
		}
		content = []byte(p.Content)
	}
	if !isASCII(content) {
		return strings.Contains(strings.ToLower(string(content)), string(m.needle)), nil
	}
	// ASCII: lower-casing is A-Z only, as strings.ToLower does for these bytes.
	m.buf = m.buf[:0]
	for _, c := range content {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		m.buf = append(m.buf, c)
	}
	return bytes.Contains(m.buf, m.needle), nil
}

// The stored post begins with its id, its user and its content, in this order: both the
// appender (appendPost) and encoding/json write Post's fields in the struct's order.
var (
	contentPrefix = []byte(`{"id":"`)
	contentUser   = []byte(`","user_id":"`)
	contentField  = []byte(`","content":"`)
)

// storedContent returns the content of a stored post, unescaped, without decoding the record
// (the bytes may be the transaction's: they are read, not kept). ok is false when the record
// does not begin as expected; the caller then decodes it.
func storedContent(raw []byte) (content []byte, ok bool) {
	rest, ok := bytes.CutPrefix(raw, contentPrefix)
	if !ok {
		return nil, false
	}
	// Ids and user ids are UUIDs: no quote or backslash in them.
	i := bytes.Index(rest, contentUser)
	if i < 0 || bytes.IndexByte(rest[:i], '\\') >= 0 {
		return nil, false
	}
	rest = rest[i+len(contentUser):]
	i = bytes.Index(rest, contentField)
	if i < 0 || bytes.IndexByte(rest[:i], '\\') >= 0 {
		return nil, false
	}
	lit := rest[i+len(contentField)-1:] // from the content's opening quote
	escaped := false
	for j := 1; j < len(lit); j++ {
		switch lit[j] {
		case '\\':
			escaped = true
			j++ // the escaped byte
		case '"':
			if !escaped {
				return lit[1:j], true
			}
			var s string
			if json.Unmarshal(lit[:j+1], &s) != nil {
				return nil, false
			}
			return []byte(s), true
		}
	}
	return nil, false
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
