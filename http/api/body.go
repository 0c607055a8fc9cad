package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

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
func readRaw(r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxJSONBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, apierr.Validation("could not read the request body")
	}
	if len(raw) > MaxJSONBody {
		return nil, tooLarge()
	}
	return raw, nil
}

func tooLarge() *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeValidation, "request body is larger than %d bytes", MaxJSONBody)
}

func parseObject(raw []byte) (object, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, apierr.Validation("Expected object, received nothing: the request body is empty")
	}
	if trimmed[0] == '{' {
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
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
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
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, typeError(field, "array", raw)
	}
	out := make([]string, 0, len(items))
	seen := map[string]bool{}
	for i, it := range items {
		if jsonType(it) != "string" {
			return nil, apierr.Validation("%s.%d: Expected string, received %s", field, i, jsonType(it))
		}
		var s string
		_ = json.Unmarshal(it, &s)
		u, err := uuid.Parse(s)
		if err != nil || len(s) != 36 {
			return nil, apierr.Validation("%s: Invalid uuid (item %d is %q)", field, i, truncate(s, 64))
		}
		id := u.String()
		if seen[id] {
			return nil, apierr.Validation("%s: duplicate id %s", field, id)
		}
		seen[id] = true
		out = append(out, id)
	}
	return out, nil
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
