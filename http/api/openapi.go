package api

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/platforms"
)

// openapiYAML is the contract: written from the spec, reviewed, and proved against the routes by
// the tests (every registered route documented, every documented route registered, every
// response of the HTTP test suite valid against it).
//
//go:embed openapi.yaml
var openapiYAML []byte

var (
	docOnce sync.Once
	docJSON []byte
	docErr  error
	docT    *openapi3.T
)

// Spec returns the parsed and validated OpenAPI document.
func Spec() (*openapi3.T, error) {
	docOnce.Do(func() {
		docT, docJSON, docErr = load(openapiYAML)
	})
	return docT, docErr
}

// Document returns the OpenAPI document as JSON.
func Document() ([]byte, error) {
	if _, err := Spec(); err != nil {
		return nil, err
	}
	return docJSON, nil
}

func load(src []byte) (*openapi3.T, []byte, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(src)
	if err != nil {
		return nil, nil, fmt.Errorf("api: load openapi.yaml: %w", err)
	}
	if err := withOptionsSchemas(doc); err != nil {
		return nil, nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, nil, fmt.Errorf("api: openapi.yaml is invalid: %w", err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("api: encode openapi document: %w", err)
	}
	return doc, b, nil
}

// withOptionsSchemas adds each network's options schema to the document's components, named
// for the network (YouTubeOptions, XOptions, ...): platforms.OptionsSchema is their one source,
// which capabilities publish too.
func withOptionsSchemas(doc *openapi3.T) error {
	for _, p := range platforms.All {
		s := maps.Clone(platforms.OptionsSchema(p))
		delete(s, "$schema") // the document's dialect is OpenAPI 3.1's
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		var schema openapi3.Schema
		if err := json.Unmarshal(b, &schema); err != nil {
			return fmt.Errorf("api: %s options schema: %w", p, err)
		}
		doc.Components.Schemas[OptionsSchemaName(p)] = openapi3.NewSchemaRef("", &schema)
	}
	return nil
}

// OptionsSchemaName is the name of a network's options schema in the OpenAPI document.
func OptionsSchemaName(p platforms.Platform) string {
	return strings.ReplaceAll(p.Name(), " ", "") + "Options"
}

// Deprecations reads the deprecated operations of a document: "METHOD /echo/route" → headers.
// The deprecation date comes from the operation's x-deprecated-at (RFC 3339 date or date-time;
// required for a deprecated operation) and the removal date from x-sunset (optional).
func Deprecations(doc *openapi3.T) (map[string]server.Deprecation, error) {
	out := map[string]server.Deprecation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if !op.Deprecated {
				continue
			}
			since, err := extDate(op.Extensions["x-deprecated-at"])
			if err != nil {
				return nil, fmt.Errorf("api: %s %s: x-deprecated-at: %w", method, path, err)
			}
			d := server.Deprecation{Since: since}
			if raw, ok := op.Extensions["x-sunset"]; ok {
				sunset, err := extDate(raw)
				if err != nil {
					return nil, fmt.Errorf("api: %s %s: x-sunset: %w", method, path, err)
				}
				if sunset.Before(since) {
					return nil, fmt.Errorf("api: %s %s: x-sunset is before x-deprecated-at", method, path)
				}
				d.Sunset = &sunset
			}
			out[strings.ToUpper(method)+" "+EchoPath(path)] = d
		}
	}
	return out, nil
}

func extDate(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, fmt.Errorf("want a date string, got %v", v)
	}
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 date", s)
}

// EchoPath turns an OpenAPI path template (/v1/posts/{id}) into Echo's (/v1/posts/:id).
func EchoPath(p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			segs[i] = ":" + seg[1:len(seg)-1]
		}
	}
	return strings.Join(segs, "/")
}
