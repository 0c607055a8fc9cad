package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/http/apierr"
)

// MaxJSONBody caps a JSON request body.
const MaxJSONBody = 1 << 20

// object is a request body parsed as a JSON object, field by field, so that every type error can
// name its field ("content: Expected string, received number").
type object map[string]json.RawMessage

// jsonType names the JSON type of a raw value the way messages say it.
func jsonType(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// readObject reads and parses the request body as a JSON object, whatever the Content-Type. A
// body that is not JSON at all (plain text) counts as a string.
func readObject(r *http.Request) (object, error) {
	raw, err := readRaw(r)
	if err != nil {
		return nil, err
	}
	return parseObject(raw)
}

// readRaw reads a request body up to MaxJSONBody; a larger one is 413.
func readRaw(r *http.Request) ([]byte, error) { return readRawLimit(r, MaxJSONBody) }

// bodyBuffer is the most a body's buffer holds before its bytes arrive: a buffer sized from
// Content-Length alone would let a client that announces a megabyte and sends nothing hold a
// megabyte per connection, for nothing.
const bodyBuffer = 32 << 10

// readRawLimit reads a request body up to limit bytes; a larger one is 413. The buffer starts at
// the announced length or bodyBuffer, whichever is smaller, and grows as bytes arrive (doubling,
// never past the announced length), so what a request holds follows what it sent.
func readRawLimit(r *http.Request, limit int64) ([]byte, error) {
	raw, err := readGrowing(r.Body, r.ContentLength, limit)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(limit)
		}
		return nil, apierr.Validation("could not read the request body")
	}
	if int64(len(raw)) > limit {
		return nil, tooLarge(limit)
	}
	return raw, nil
}

// readGrowing reads r to its end, or to limit+1 bytes (one past the limit tells a larger body);
// announced is the length the request declared (-1: unknown).
func readGrowing(r io.Reader, announced, limit int64) ([]byte, error) {
	hint := limit + 1
	if announced >= 0 && announced < limit {
		hint = announced + 1 // and one past it reads its end
	}
	buf := make([]byte, 0, min(hint, bodyBuffer))
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			grow := int64(max(cap(buf), 512))
			if left := hint - int64(len(buf)); left > 0 {
				grow = min(grow, left)
			}
			buf = slices.Grow(buf, int(grow))
		}
		n, err := r.Read(buf[len(buf):min(int64(cap(buf)), limit+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func tooLarge(limit int64) *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeValidation, "request body is larger than %d bytes", limit)
}

func parseObject(raw []byte) (object, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, apierr.Validation("Expected object, received nothing: the request body is empty")
	}
	if trimmed[0] == '{' {
		if json.Valid(trimmed) {
			if err := checkEncoding(trimmed); err != nil {
				return nil, err
			}
			return splitObject(trimmed), nil
		}
		var o object
		if err := json.Unmarshal(trimmed, &o); err != nil {
			return nil, apierr.Validation("Malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return o, nil
	}
	if !json.Valid(trimmed) {
		if trimmed[0] == '[' {
			var v any
			err := json.Unmarshal(trimmed, &v)
			return nil, apierr.Validation("Malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		// Not JSON at all: plain text, which counts as a string.
		return nil, apierr.Validation("Expected object, received string")
	}
	return nil, apierr.Validation("Expected object, received %s", jsonType(trimmed))
}

func typeError(field, want string, raw []byte) *apierr.Error {
	return apierr.Validation("%s: Expected %s, received %s", field, want, jsonType(raw))
}

// has reports whether the field is present (null counts as present).
func (o object) has(field string) bool {
	_, ok := o[field]
	return ok
}

// str reads a string field. Absent: nil, nil; required and absent: "Required".
func (o object) str(field string, required bool) (*string, error) {
	raw, ok := o[field]
	if !ok {
		if required {
			return nil, apierr.Validation("%s: Required", field)
		}
		return nil, nil
	}
	if jsonType(raw) != "string" {
		return nil, typeError(field, "string", raw)
	}
	s, err := unquote(raw)
	if err != nil {
		return nil, typeError(field, "string", raw)
	}
	return &s, nil
}

// uuids reads an array of UUID strings, refusing duplicates. Absent: nil, nil.
func (o object) uuids(field string, required bool) ([]string, error) {
	raw, ok := o[field]
	if !ok {
		if required {
			return nil, apierr.Validation("%s: Required", field)
		}
		return nil, nil
	}
	if jsonType(raw) != "array" {
		return nil, typeError(field, "array", raw)
	}
	items := splitArray(raw)
	out := make([]string, 0, len(items))
	var seen map[string]bool // for long lists; a short one is searched
	if len(items) > 16 {
		seen = make(map[string]bool, len(items))
	}
	for i, it := range items {
		if jsonType(it) != "string" {
			return nil, apierr.Validation("%s.%d: Expected string, received %s", field, i, jsonType(it))
		}
		s, _ := unquote(it)
		u, err := uuid.Parse(s)
		if err != nil || len(s) != 36 {
			return nil, apierr.Validation("%s: Invalid uuid (item %d is %q)", field, i, truncate(s, 64))
		}
		id := s
		if hasUpper(s) {
			id = u.String()
		}
		if (seen == nil && slices.Contains(out, id)) || seen[id] {
			return nil, apierr.Validation("%s: duplicate id %s", field, id)
		}
		if seen != nil {
			seen[id] = true
		}
		out = append(out, id)
	}
	return out, nil
}

// hasUpper reports whether s has an upper-case letter: a parsed id without one is already in
// the canonical form uuid.UUID.String would write, and is kept without a copy.
func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// parseUUID validates a path id.
func parseUUID(name, s string) (string, error) {
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", apierr.Validation("%s: Invalid uuid", name)
	}
	return u.String(), nil
}

// The splitters below walk a JSON document already checked by json.Valid, so they only find
// where each member or element ends; they are several times cheaper than decoding into a map
// of json.RawMessage, on the path of every create and publish.

// splitObject returns the members of a valid JSON object (a repeated name keeps its last value,
// as encoding/json does).
func splitObject(doc []byte) object {
	o := make(object, 4)
	i := skipSpace(doc, 1)
	for i < len(doc) && doc[i] != '}' {
		end := valueEnd(doc, i)
		name, _ := unquote(doc[i:end])
		i = skipSpace(doc, end)
		i = skipSpace(doc, i+1) // the colon
		end = valueEnd(doc, i)
		o[name] = doc[i:end]
		i = skipSpace(doc, end)
		if i < len(doc) && doc[i] == ',' {
			i = skipSpace(doc, i+1)
		}
	}
	return o
}

// splitArray returns the elements of a valid JSON array.
func splitArray(doc []byte) [][]byte {
	doc = bytes.TrimSpace(doc)
	var out [][]byte
	i := skipSpace(doc, 1)
	for i < len(doc) && doc[i] != ']' {
		end := valueEnd(doc, i)
		out = append(out, doc[i:end])
		i = skipSpace(doc, end)
		if i < len(doc) && doc[i] == ',' {
			i = skipSpace(doc, i+1)
		}
	}
	return out
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the valid JSON value that starts at doc[i].
func valueEnd(doc []byte, i int) int {
	switch doc[i] {
	case '"':
		for j := i + 1; j < len(doc); j++ {
			switch doc[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(doc)
	case '{', '[':
		depth := 0
		for j := i; j < len(doc); j++ {
			switch doc[j] {
			case '"':
				j = valueEnd(doc, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(doc)
	}
	j := i
	for j < len(doc) && doc[j] != ',' && doc[j] != '}' && doc[j] != ']' && doc[j] != ' ' && doc[j] != '\t' && doc[j] != '\n' && doc[j] != '\r' {
		j++
	}
	return j
}

// unquote decodes a JSON string; a string with no escape and valid UTF-8 is taken as it is.
func unquote(raw []byte) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		inner := raw[1 : len(raw)-1]
		if bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 && utf8.Valid(inner) && !hasControl(inner) {
			return string(inner), nil
		}
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// checkEncoding refuses a JSON object whose text is not what it says: bytes that are not UTF-8
// (RFC 8259 8.1), and \u escapes of unpaired UTF-16 surrogates. encoding/json would decode both
// into U+FFFD without a word, so a client's text would reach the networks changed; Herald refuses
// the request instead, naming the top-level field that holds the fault and its byte offset in the
// body. doc is a valid JSON object.
func checkEncoding(doc []byte) error {
	if i, reason, bad := encodingFault(doc, 0); bad {
		return encodingError(doc, i, reason)
	}
	return nil
}

// encodingFault finds the first fault checkEncoding refuses in the JSON text b: its index in b,
// and the reason, which names its offset in the request body as base+index (base is where b
// starts in the body).
func encodingFault(b []byte, base int) (at int, reason string, bad bool) {
	if utf8.Valid(b) && !bytes.Contains(b, []byte(`\u`)) {
		return 0, "", false
	}
	doc := b
	for i := 0; i < len(doc); {
		c := doc[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(doc[i:])
			if r == utf8.RuneError && size == 1 {
				return i, fmt.Sprintf("is not valid UTF-8: byte 0x%02X at offset %d of the request body; send UTF-8 text", c, base+i), true
			}
			i += size
			continue
		}
		if c != '\\' || i+1 >= len(doc) {
			i++
			continue
		}
		if doc[i+1] != 'u' {
			i += 2 // an escape: \\, \" and the others
			continue
		}
		u, ok := hex4(doc, i+2)
		switch {
		case !ok:
			i += 2
			continue
		case u >= 0xd800 && u <= 0xdbff:
			if lo, ok := hex4(doc, i+8); ok && doc[i+6] == '\\' && doc[i+7] == 'u' && lo >= 0xdc00 && lo <= 0xdfff {
				i += 12
				continue
			}
		case u >= 0xdc00 && u <= 0xdfff:
		default:
			i += 6
			continue
		}
		return i, fmt.Sprintf("contains the unpaired surrogate escape %s at offset %d of the request body; "+
			"a character beyond U+FFFF is escaped as a pair such as \\ud83d\\ude00, or sent as UTF-8", doc[i:i+6], base+i), true
	}
	return 0, "", false
}

// hex4 reads the four hex digits at doc[i:i+4].
func hex4(doc []byte, i int) (rune, bool) {
	if i+4 > len(doc) {
		return 0, false
	}
	var r rune
	for _, c := range doc[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// encodingError is a 400 naming the top-level member of doc whose name or value holds offset.
func encodingError(doc []byte, offset int, reason string) error {
	if name := memberAt(doc, offset); name != "" {
		return apierr.Validation("%s: %s", name, reason)
	}
	return apierr.Validation("request body %s", reason)
}

// memberAt returns the name of the top-level member of the valid JSON object doc that spans
// offset ("" when none does, or when its name is not valid text itself).
func memberAt(doc []byte, offset int) string {
	i := skipSpace(doc, 1)
	for i < len(doc) && doc[i] != '}' {
		start := i
		end := valueEnd(doc, i)
		name, _ := unquote(doc[i:end])
		i = skipSpace(doc, end)
		i = skipSpace(doc, i+1) // the colon
		end = valueEnd(doc, i)
		if offset >= start && offset < end {
			if offset < i || !utf8.ValidString(name) {
				return "" // in the name itself
			}
			return truncate(name, 64)
		}
		i = skipSpace(doc, end)
		if i < len(doc) && doc[i] == ',' {
			i = skipSpace(doc, i+1)
		}
	}
	return ""
}
