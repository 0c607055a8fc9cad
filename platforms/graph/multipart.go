package graph

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"sort"
	"strings"
)

// Multipart builds a multipart/form-data body holding fields and one file, streaming the file
// rather than buffering it. When size is positive the body's length is known and returned (the
// request is sent with a Content-Length); otherwise length is -1 and the body is sent chunked.
func Multipart(fields url.Values, fileField, filename, fileType string, file io.Reader, size int64) (body io.Reader, contentType string, length int64, err error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range fields[k] {
			if err := w.WriteField(k, v); err != nil {
				return nil, "", 0, fmt.Errorf("multipart field %s: %w", k, err)
			}
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, quote(fileField), quote(filename)))
	if fileType == "" {
		fileType = "application/octet-stream"
	}
	h.Set("Content-Type", fileType)
	if _, err := w.CreatePart(h); err != nil {
		return nil, "", 0, fmt.Errorf("multipart file part: %w", err)
	}
	headLen := buf.Len()
	if err := w.Close(); err != nil {
		return nil, "", 0, fmt.Errorf("multipart close: %w", err)
	}
	all := buf.Bytes()
	head, tail := all[:headLen], all[headLen:]
	length = -1
	if size > 0 {
		length = int64(len(head)) + size + int64(len(tail))
		file = io.LimitReader(file, size)
	}
	return io.MultiReader(bytes.NewReader(head), file, bytes.NewReader(tail)), w.FormDataContentType(), length, nil
}

func quote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "").Replace(s)
}
