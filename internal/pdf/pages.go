// Package pdf counts the pages of a PDF file without rendering it, for the limits a network puts
// on a document (LinkedIn: 300 pages).
//
// The count is read from the file's page tree: every dictionary of /Type /Pages carries /Count,
// the number of pages beneath it, so the root's /Count — the largest — is the document's page
// count. The dictionaries are found by scanning the file's bytes and the decompressed contents of
// its object streams (/Type /ObjStm, FlateDecode or unfiltered), where PDF 1.5 and later often
// keep them; the cross-reference table is not followed. When no page tree node is found, the page
// objects themselves (/Type /Page) are counted.
//
// Limits, by design:
//   - A file updated incrementally keeps its older page trees beside the new one; the largest
//     count wins, so a document that lost pages in an update is counted at its older size (a
//     count errs on the high side, never lets a longer file through).
//   - An encrypted file whose page tree sits in an encrypted object stream cannot be read: it is
//     ErrUnreadable, as is a file with no page tree and no page object at all.
//   - A /Count given as an indirect reference (5 0 R) is not followed: such a node is skipped.
//   - A "<<" or ">>" inside a string of a page tree node may mislead the scan of that node.
//   - Decompression stops at MaxInflated bytes in all, so that a small file cannot expand into an
//     unbounded amount of memory; the scan of dictionaries reads at most a few times the bytes
//     there are (workFactor), so that a file made of many unclosed dictionaries cannot make the
//     count take quadratic time: such a file is ErrUnreadable.
package pdf

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"regexp"
	"strconv"
)

// Magic is how every PDF file begins.
const Magic = "%PDF-"

// MaxInflated bounds the bytes decompressed from a file's object streams, all together.
const MaxInflated = 256 << 20

// workFactor bounds the bytes the dictionary scans read: this many times the bytes scanned
// (the file and what was decompressed), plus a megabyte.
const workFactor = 4

// Errors of Pages.
var (
	// ErrNotPDF means the bytes do not begin with %PDF-.
	ErrNotPDF = errors.New("pdf: not a PDF file (it does not begin with %PDF-)")
	// ErrUnreadable means the file's pages could not be counted.
	ErrUnreadable = errors.New("pdf: the file's pages could not be counted (an encrypted or damaged PDF?)")
)

var (
	pagesType = regexp.MustCompile(`/Type\s*/Pages\b`)
	pageType  = regexp.MustCompile(`/Type\s*/Page(?:[^A-Za-z0-9_.#-]|$)`)
	count     = regexp.MustCompile(`/Count\s+(\d+)(\s+\d+\s+R)?`)
	objStm    = regexp.MustCompile(`/Type\s*/ObjStm\b`)
	flate     = regexp.MustCompile(`/Filter\s*(\[\s*)?/FlateDecode\b`)
	anyFilter = regexp.MustCompile(`/Filter\b`)
	streamKw  = regexp.MustCompile(`stream\r?\n`)
)

// Pages counts the pages of a PDF file held in data.
func Pages(data []byte) (int, error) { return pages(data, MaxInflated) }

// pages is Pages with a bound on decompression.
func pages(data []byte, maxInflated int64) (int, error) {
	if !bytes.HasPrefix(data, []byte(Magic)) {
		return 0, ErrNotPDF
	}
	sources := [][]byte{data}
	budget := maxInflated
	work := int64(workFactor)*int64(len(data)) + 1<<20
	for _, loc := range objStm.FindAllIndex(data, -1) {
		if budget <= 0 || work <= 0 {
			break
		}
		if s := objectStream(data, loc[0], &budget, &work); s != nil {
			sources = append(sources, s)
			work += int64(workFactor) * int64(len(s))
		}
	}
	best := -1
	for _, src := range sources {
		for _, loc := range pagesType.FindAllIndex(src, -1) {
			if n, ok := treeCount(src, loc[0], &work); ok && n > best {
				best = n
			}
		}
	}
	if work <= 0 {
		return 0, ErrUnreadable
	}
	if best >= 0 {
		return best, nil
	}
	leaves := 0
	for _, src := range sources {
		leaves += len(pageType.FindAllIndex(src, -1))
	}
	if leaves == 0 {
		return 0, ErrUnreadable
	}
	return leaves, nil
}

// treeCount reads /Count from the dictionary enclosing position at (a /Type /Pages entry).
func treeCount(src []byte, at int, work *int64) (int, bool) {
	start, end := enclosing(src, at, work)
	if start < 0 {
		return 0, false
	}
	dict := src[start:end]
	// Only the node's own entries: nested dictionaries (a /Resources) are cut out.
	flat := topLevel(dict)
	m := count.FindSubmatch(flat)
	if m == nil || len(m[2]) > 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return 0, false
	}
	return n, true
}

// enclosing finds the "<<" … ">>" dictionary around position at: start is the index of its "<<",
// end the index after its ">>"; start is -1 when there is none, or when the scan would read more
// than work allows (each byte read spends one).
func enclosing(src []byte, at int, work *int64) (start, end int) {
	depth := 0
	start = -1
	for i := at - 1; i > 0; i-- {
		if *work--; *work <= 0 {
			return -1, 0
		}
		switch {
		case src[i-1] == '>' && src[i] == '>':
			depth++
			i--
		case src[i-1] == '<' && src[i] == '<':
			if depth == 0 {
				start = i - 1
			} else {
				depth--
			}
			i--
		}
		if start >= 0 {
			break
		}
	}
	if start < 0 {
		return -1, 0
	}
	depth = 0
	for i := start; i+1 < len(src); i++ {
		if *work--; *work <= 0 {
			return -1, 0
		}
		switch {
		case src[i] == '<' && src[i+1] == '<':
			depth++
			i++
		case src[i] == '>' && src[i+1] == '>':
			depth--
			i++
			if depth == 0 {
				return start, i + 1
			}
		}
	}
	return -1, 0
}

// topLevel is a dictionary's text with its nested dictionaries and arrays removed.
func topLevel(dict []byte) []byte {
	out := make([]byte, 0, len(dict))
	depth := 0
	for i := 0; i < len(dict); i++ {
		c := dict[i]
		switch {
		case c == '<' && i+1 < len(dict) && dict[i+1] == '<':
			depth++
			i++
			out = append(out, ' ')
			continue
		case c == '>' && i+1 < len(dict) && dict[i+1] == '>':
			depth--
			i++
			out = append(out, ' ')
			continue
		case c == '[':
			depth++
		case c == ']':
			depth--
		}
		if depth <= 1 && c != '[' && c != ']' {
			out = append(out, c)
		} else {
			out = append(out, ' ')
		}
	}
	return out
}

// objectStream returns the decompressed content of the object stream whose dictionary holds
// position at; nil when it cannot be read (another filter, damaged or encrypted data). budget is
// what may still be decompressed, and is spent.
func objectStream(data []byte, at int, budget, work *int64) []byte {
	start, end := enclosing(data, at, work)
	if start < 0 {
		return nil
	}
	dict := data[start:end]
	compressed := flate.Match(dict)
	if !compressed && anyFilter.Match(dict) {
		return nil
	}
	rest := data[end:]
	loc := streamKw.FindIndex(rest)
	if loc == nil || len(bytes.TrimSpace(rest[:loc[0]])) != 0 {
		return nil
	}
	body := rest[loc[1]:]
	if i := bytes.Index(body, []byte("endstream")); i >= 0 {
		body = body[:i]
	}
	if !compressed {
		*budget -= int64(len(body))
		return body
	}
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, *budget))
	*budget -= int64(len(out))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && len(out) == 0 {
		return nil
	}
	return out
}
