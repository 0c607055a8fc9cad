package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/apierr"
)

var bodySeeds = []string{
	`{}`, ` { } `, `{"content":"hi","platforms":["a","b"]}`,
	`{"a":{"b":[1,2,{"c":"}]"}]},"d":"\"}","e":-1.5e3,"f":true,"g":null}`,
	"{\n\t\"content\" : \"x\\u00e9\\n\" ,\r\n \"platforms\":[ ]\n}",
	`{"dup":1,"dup":"two"}`, `{"\u0063ontent":"escaped name"}`, `{"k":"<&>\u2028"}`,
	`{"invalid utf8":"` + "\xff" + `"}`, `{"n":[[],[[]],{}]}`,
}

// splitObject agrees with encoding/json's decoding into a map of raw messages on every valid
// object.
func FuzzSplitObject(f *testing.F) {
	for _, s := range bodySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		doc := bytes.TrimSpace([]byte(s))
		if len(doc) == 0 || doc[0] != '{' || !json.Valid(doc) {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(doc, &want); err != nil {
			t.Fatalf("valid but not decodable: %v", err)
		}
		got := splitObject(doc)
		if len(got) != len(want) {
			t.Fatalf("%s: %d members, want %d", s, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
				t.Fatalf("%s: member %q is %s, want %s", s, k, got[k], v)
			}
			if jsonType(v) == "string" {
				var ws string
				_ = json.Unmarshal(v, &ws)
				if gs, err := unquote(got[k]); err != nil || gs != ws {
					t.Fatalf("%s: member %q unquotes to %q (%v), want %q", s, k, gs, err, ws)
				}
			}
			if jsonType(v) == "array" {
				var items []json.RawMessage
				_ = json.Unmarshal(v, &items)
				split := splitArray(got[k])
				if len(split) != len(items) {
					t.Fatalf("%s: array %q has %d items, want %d", s, k, len(split), len(items))
				}
				for i := range items {
					if !bytes.Equal(split[i], bytes.TrimSpace(items[i])) {
						t.Fatalf("%s: item %d is %s, want %s", s, i, split[i], items[i])
					}
				}
			}
		}
	})
}

func TestUUIDListsRefuseDuplicatesShortAndLong(t *testing.T) {
	for _, n := range []int{2, 40} {
		var b bytes.Buffer
		b.WriteString(`{"platforms":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"0190d5a0-0000-7000-8000-%012x"`, i)
		}
		b.WriteString(`,"0190d5a0-0000-7000-8000-000000000001"]}`)
		o, err := parseObject(b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.uuids("platforms", true); err == nil || !bytes.Contains([]byte(err.Error()), []byte("duplicate id")) {
			t.Fatalf("%d ids and a repeat: %v", n, err)
		}
	}
}

// A body whose text is not UTF-8, or escapes an unpaired surrogate, is refused, naming the
// top-level member that holds it; encoding/json would replace either with U+FFFD.
func TestBodiesMustBeUTF8(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"content":"ab` + "\xff\xfe" + `"}`, "content: is not valid UTF-8: byte 0xFF at offset 14 of the request body"},
		{`{"a":1,"platforms":["x` + "\xc3" + `"]}`, "platforms: is not valid UTF-8: byte 0xC3 at offset 22"},
		{`{"k` + "\xff" + `":1}`, "request body is not valid UTF-8: byte 0xFF at offset 3"},
		{`{"text":"\ud800"}`, `text: contains the unpaired surrogate escape \ud800 at offset 9`},
		{`{"text":"\uDBFF\u0041"}`, `text: contains the unpaired surrogate escape \uDBFF`},
		{`{"text":"x\udc00y"}`, `text: contains the unpaired surrogate escape \udc00 at offset 10`},
		{`{"text":"\\ud800"}`, ""},                  // an escaped backslash, then text
		{`{"text":"\ud83d\ude00 \u00e9 \"\\"}`, ""}, // a pair, and other escapes
		{`{"text":"é 😀"}`, ""},
	} {
		_, err := parseObject([]byte(tc.body))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.body, err)
			}
			continue
		}
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}

// probeReader hands out its bytes a few at a time, then fails (a client that went away), and
// records the largest buffer a read offered it: what the reader allocated before the bytes came.
type probeReader struct {
	data    []byte
	step    int
	maxCap  int
	failErr error
}

func (p *probeReader) Read(b []byte) (int, error) {
	p.maxCap = max(p.maxCap, cap(b))
	if len(p.data) == 0 {
		if p.failErr != nil {
			return 0, p.failErr
		}
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.step)], p.data)
	p.data = p.data[n:]
	return n, nil
}

// A body announced as a megabyte of which a few bytes arrive holds a small buffer, not a
// megabyte: the buffer follows the bytes received.
func TestReadRawDoesNotAllocateFromContentLength(t *testing.T) {
	t.Parallel()
	p := &probeReader{data: []byte(`{"email":`), step: 3, failErr: io.ErrUnexpectedEOF}
	r := httptest.NewRequest(http.MethodPost, "/api/session", p)
	r.ContentLength = 1 << 20
	_, err := readRawLimit(r, MaxJSONBody)
	var ae *apierr.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusBadRequest, ae.Status)
	require.LessOrEqual(t, p.maxCap, bodyBuffer, "no read was offered more than the small buffer")

	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for range 20 {
		p := &probeReader{data: []byte(`{"email":`), step: 3, failErr: io.ErrUnexpectedEOF}
		r := httptest.NewRequest(http.MethodPost, "/api/session", p)
		r.ContentLength = 1 << 20
		_, _ = readRawLimit(r, MaxJSONBody)
	}
	runtime.ReadMemStats(&ms1)
	require.Less(t, ms1.TotalAlloc-ms0.TotalAlloc, uint64(20<<20)/4, "20 such bodies allocated far less than 20 MiB")
}

// Whatever the announced length, the body read is the body sent, up to the limit.
func TestReadRawLimit(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16) // 200 KiB: grows past the first buffer
	for _, c := range []struct {
		name      string
		body      []byte
		announced int64
		limit     int64
		step      int
		tooLarge  bool
	}{
		{"announced exactly", big, int64(len(big)), 1 << 20, 7000, false},
		{"unknown length", big, -1, 1 << 20, 5000, false},
		{"empty", nil, 0, 1 << 20, 1, false},
		{"at the limit", big[:1000], 1000, 1000, 64, false},
		{"over the limit, announced", big[:1001], 1001, 1000, 64, true},
		{"over the limit, unknown length", big[:1001], -1, 1000, 64, true},
		{"longer than announced", big[:5000], 100, 1 << 20, 64, false},
		{"longer than announced, over the limit", big[:5000], 100, 1000, 64, true},
	} {
		p := &probeReader{data: c.body, step: c.step}
		r := httptest.NewRequest(http.MethodPost, "/v1/posts", p)
		r.ContentLength = c.announced
		got, err := readRawLimit(r, c.limit)
		if c.tooLarge {
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae, c.name)
			require.Equal(t, http.StatusRequestEntityTooLarge, ae.Status, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.Len(t, got, len(c.body), c.name)
		require.True(t, bytes.Equal(c.body, got), c.name)
	}
}

// A list's ids come back in the canonical lower-case form, whatever case the client wrote, so that
// an id written in two cases is one id.
func TestUUIDListsAreCanonical(t *testing.T) {
	o, err := parseObject([]byte(`{"platforms":["0190D5A0-0000-7000-8000-00000000000A","0190d5a0-0000-7000-8000-00000000000b"],` +
		`"media":["0190d5a0-0000-7000-8000-00000000000c","0190d5a0-0000-7000-8000-00000000000C"]}`))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := o.uuids("platforms", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0190d5a0-0000-7000-8000-00000000000a", "0190d5a0-0000-7000-8000-00000000000b"}; !slices.Equal(ids, want) {
		t.Fatalf("ids %q, want %q", ids, want)
	}
	if _, err := o.uuids("media", true); err == nil || !strings.Contains(err.Error(), "duplicate id 0190d5a0-0000-7000-8000-00000000000c") {
		t.Fatalf("an id in two cases: %v", err)
	}
}
