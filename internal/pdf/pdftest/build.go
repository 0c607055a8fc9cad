// Package pdftest writes small valid PDF files for tests.
package pdftest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
)

// Build writes a small valid PDF of n blank pages, for tests: a two-level page tree (the root's
// kids are nodes of at most 100 pages each). compressed puts the page tree's nodes in a
// FlateDecode object stream, as PDF 1.5 writers do.
func Build(n int, compressed bool) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offsets := map[int]int{}
	obj := func(num int, body string) {
		offsets[num] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", num, body)
	}
	// Objects: 1 catalog, 2 root, 3.. intermediate nodes, then pages.
	groups := (n + 99) / 100
	if groups == 0 {
		groups = 1
	}
	firstPage := 3 + groups
	var nodes []string // the intermediate nodes' text, by group
	var kids []string
	for g := 0; g < groups; g++ {
		var pk []string
		lo, hi := g*100, min((g+1)*100, n)
		for p := lo; p < hi; p++ {
			pk = append(pk, fmt.Sprintf("%d 0 R", firstPage+p))
		}
		nodes = append(nodes, fmt.Sprintf("<< /Type /Pages /Parent 2 0 R /Kids [%s] /Count %d /Resources << /Font << >> >> >>", strings.Join(pk, " "), hi-lo))
		kids = append(kids, fmt.Sprintf("%d 0 R", 3+g))
	}
	root := fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /MediaBox [0 0 612 792] >>", strings.Join(kids, " "), n)
	obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
	if compressed {
		// Objects 2.. in one object stream (number 9999): the header gives each object's number
		// and offset.
		var header, body strings.Builder
		all := append([]string{root}, nodes...)
		for i, text := range all {
			fmt.Fprintf(&header, "%d %d ", 2+i, body.Len())
			body.WriteString(text + "\n")
		}
		content := header.String() + body.String()
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		_, _ = w.Write([]byte(content))
		_ = w.Close()
		offsets[9999] = b.Len()
		fmt.Fprintf(&b, "9999 0 obj\n<< /Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d >>\nstream\n", len(all), len(header.String()), z.Len())
		b.Write(z.Bytes())
		b.WriteString("\nendstream\nendobj\n")
	} else {
		obj(2, root)
		for g, text := range nodes {
			obj(3+g, text)
		}
	}
	for p := 0; p < n; p++ {
		obj(firstPage+p, fmt.Sprintf("<< /Type /Page /Parent %d 0 R >>", 3+p/100))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", firstPage+n, xref)
	return b.Bytes()
}
