package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"
	"unicode"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A damaged database file (truncated, overwritten in part, not a bbolt file at all) must stop
// Herald with a message that names the file, never crash it or let it run on. bbolt maps the
// file into memory and trusts the page ids it finds there: a page past the end of a truncated
// file raises SIGBUS when it is read, a garbage page id points anywhere, and neither is a panic
// that recover can catch. So before bbolt opens a file, Open reads its structure here with plain
// reads (no mapping): the meta pages, the high-water mark against the file's size, the freelist,
// the root bucket and the root page of every bucket (a few dozen pages, whatever the file's
// size); with Options.Check, every page of every bucket. bbolt then opens a file whose pages it
// can read, and what it still panics on (a corrupt value it decodes, a page whose contents lie)
// is recovered with the runtime's faults turned into panics.

// ErrDamaged matches a DamagedError: the database file cannot be used as it is.
var ErrDamaged = errors.New("persistence: the database file is damaged")

// DamagedError says which database file is damaged and how.
type DamagedError struct {
	Path     string
	Problems []string // at least one
	More     int      // problems found beyond those listed
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the database file %s is damaged: %s", e.Path, e.Summary())
}

// Summary is the first problem, with the count of the others.
func (e *DamagedError) Summary() string {
	s := "unknown damage"
	if len(e.Problems) > 0 {
		s = e.Problems[0]
	}
	if n := len(e.Problems) - 1 + e.More; n > 0 {
		s += fmt.Sprintf(" (and %d more problem%s)", n, plural(n))
	}
	return s
}

// Is makes errors.Is(err, ErrDamaged) true.
func (e *DamagedError) Is(target error) bool { return target == ErrDamaged }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// The on-disk layout of bbolt's format version 2 (go.etcd.io/bbolt/internal/common), in the
// machine's byte order as bbolt writes it.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16 // id (8), flags (2), count (2), overflow (4)
	elementSize    = 16 // branch: pos, ksize (4 each), child page id (8); leaf: flags, pos, ksize, vsize (4 each)
	bucketHeader   = 16 // a bucket's value: root page id (8; 0 = inline), sequence (8), then an inline page
	metaSize       = 64 // magic, version, page size, flags (4 each), root bucket (16), freelist, pgid, txid, checksum (8 each)
	flagBranch     = 0x01
	flagLeaf       = 0x02
	flagMeta       = 0x04
	flagFreelist   = 0x10
	noFreelist     = ^uint64(0)
	maxTreeDepth   = 64
	maxProblems    = 100
)

var ne = binary.NativeEndian

// boltMeta is one meta page as read from the file.
type boltMeta struct {
	page     int // 0 or 1
	pageSize uint64
	root     uint64 // the root bucket's root page
	freelist uint64
	pgid     uint64 // the high-water mark: pages in use are below it
	txid     uint64
	invalid  string // why the page is not a valid meta page; "" when it is
}

// parseMeta reads the meta of the page in b (at least pageHeaderSize+metaSize bytes).
func parseMeta(b []byte, page int) boltMeta {
	m := boltMeta{page: page}
	if len(b) < pageHeaderSize+metaSize {
		m.invalid = "the file ends inside it"
		return m
	}
	d := b[pageHeaderSize : pageHeaderSize+metaSize]
	magic, version := ne.Uint32(d[0:]), ne.Uint32(d[4:])
	m.pageSize = uint64(ne.Uint32(d[8:]))
	m.root, m.freelist = ne.Uint64(d[16:]), ne.Uint64(d[32:])
	m.pgid, m.txid = ne.Uint64(d[40:]), ne.Uint64(d[48:])
	h := fnv.New64a()
	h.Write(d[:56])
	switch {
	case magic != boltMagic:
		m.invalid = "no bbolt magic number"
	case version != boltVersion:
		m.invalid = fmt.Sprintf("bbolt file format version %d, this Herald reads version %d", version, boltVersion)
	case ne.Uint64(d[56:]) != h.Sum64():
		m.invalid = "its checksum does not match"
	case m.pageSize < 1024 || m.pageSize > 1<<24 || m.pageSize&(m.pageSize-1) != 0:
		m.invalid = fmt.Sprintf("page size %d", m.pageSize)
	}
	return m
}

// fileLayout is what an inspection learned of a file.
type fileLayout struct {
	size      int64
	pageSize  uint64
	pages     uint64 // high-water mark
	txid      uint64
	meta      int // the meta page in use
	freePages int
	walked    int // pages read
}

// inspector reads a bbolt file's structure page by page with plain reads.
type inspector struct {
	r        io.ReaderAt
	lay      fileLayout
	full     bool
	owner    map[uint64]string // page → the bucket whose tree holds it
	spare    [][]byte          // page buffers done with, reused
	problems []string
	more     int
}

func (in *inspector) problem(format string, args ...any) {
	if len(in.problems) >= maxProblems {
		in.more++
		return
	}
	in.problems = append(in.problems, fmt.Sprintf(format, args...))
}

// inspect reads the structure of the bbolt file of size bytes in r: with full, every page of
// every bucket; else the meta pages, the freelist, the root bucket and each bucket's root page.
// It returns nil layout when no meta page is usable.
func inspect(r io.ReaderAt, size int64, full bool) (*fileLayout, []string, int) {
	in := &inspector{r: r, full: full, owner: map[uint64]string{}}
	in.lay.size = size
	if size == 0 {
		in.problem("it is empty (0 bytes), but a database file Herald has written holds at least 4 pages; if Herald never started on this directory, delete the file")
		return nil, in.problems, 0
	}
	metas := in.readMetas(size)
	if metas == nil {
		return nil, in.problems, in.more
	}
	// bbolt uses the valid meta page of the later transaction.
	cur := metas[0]
	if cur.invalid != "" || (metas[1].invalid == "" && metas[1].txid > cur.txid) {
		cur = metas[1]
	}
	in.lay.pageSize, in.lay.pages, in.lay.txid, in.lay.meta = cur.pageSize, cur.pgid, cur.txid, cur.page
	if cur.pgid < 4 || cur.pgid > 1<<48 {
		in.problem("meta page %d names %d pages: it has been overwritten", cur.page, cur.pgid)
		return nil, in.problems, in.more
	}
	if end := cur.pgid * cur.pageSize; uint64(size) < end {
		in.problem("it is truncated to %d bytes, but its pages reach byte %d (%d pages of %d bytes)", size, end, cur.pgid, cur.pageSize)
		return nil, in.problems, in.more
	}
	for _, m := range metas {
		if m.invalid != "" {
			in.problem("meta page %d is not valid (%s); the file's state would be read from meta page %d (transaction %d), which may lack the last transaction written",
				m.page, m.invalid, cur.page, cur.txid)
		}
	}
	in.owner[0], in.owner[1] = "meta", "meta"
	if cur.freelist != noFreelist {
		in.freelist(cur.freelist)
	}
	in.walk(cur.root, "", true, 0)
	in.lay.walked = len(in.owner)
	return &in.lay, in.problems, in.more
}

// readMetas reads the two meta pages, finding the page size the way bbolt does: from the first
// meta page, else from the second one at each possible page size. It returns nil (with the
// problem noted) when neither is valid.
func (in *inspector) readMetas(size int64) []boltMeta {
	buf := make([]byte, pageHeaderSize+metaSize)
	read := func(off int64, page int) boltMeta {
		n, _ := in.r.ReadAt(buf, off)
		return parseMeta(buf[:n], page)
	}
	m0 := read(0, 0)
	if m0.invalid == "" {
		return []boltMeta{m0, read(int64(m0.pageSize), 1)}
	}
	for ps := int64(1024); ps <= 1<<24 && ps < size; ps <<= 1 {
		if m1 := read(ps, 1); m1.invalid == "" && int64(m1.pageSize) == ps {
			return []boltMeta{m0, m1}
		}
	}
	switch {
	case size < 2*1024:
		in.problem("it is %d bytes long, too short to be a bbolt database", size)
	case m0.invalid == "no bbolt magic number":
		in.problem("it is not a bbolt database: neither meta page carries bbolt's magic number%s", formatHint(in.r))
	default:
		in.problem("neither meta page is valid (meta page 0: %s)", m0.invalid)
	}
	return nil
}

// formatHint names a few formats a wrong file is often in.
func formatHint(r io.ReaderAt) string {
	b := make([]byte, 16)
	n, _ := r.ReadAt(b, 0)
	b = b[:n]
	switch {
	case strings.HasPrefix(string(b), "SQLite format 3"):
		return " (it is an SQLite database)"
	case len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b:
		return " (it is gzip-compressed)"
	case strings.HasPrefix(string(b), "PK\x03\x04"):
		return " (it is a zip archive)"
	case len(b) > 0 && (b[0] == '{' || b[0] == '['):
		return " (it starts like JSON text)"
	}
	return ""
}

// page reads page id with its overflow pages, after checking its header: where says whose page
// it is, for the problem.
func (in *inspector) page(id uint64, where string) []byte {
	ps, hwm := in.lay.pageSize, in.lay.pages
	if id < 2 || id >= hwm {
		in.problem("%s names page %d, outside the file's pages (2 to %d)", where, id, hwm-1)
		return nil
	}
	if prev, ok := in.owner[id]; ok {
		in.problem("%s names page %d, which already belongs to %s", where, id, prev)
		return nil
	}
	var b []byte
	if n := len(in.spare); n > 0 {
		b, in.spare = in.spare[n-1], in.spare[:n-1]
	} else {
		b = make([]byte, ps)
	}
	if _, err := in.r.ReadAt(b, int64(id*ps)); err != nil {
		in.problem("%s: page %d cannot be read: %v", where, id, err)
		return nil
	}
	if got := ne.Uint64(b); got != id {
		in.problem("%s: page %d has been overwritten (its header names page %d)", where, id, got)
		return nil
	}
	overflow := uint64(ne.Uint32(b[12:]))
	if id+overflow >= hwm {
		in.problem("%s: page %d runs %d pages on, past the last page %d", where, id, overflow, hwm-1)
		return nil
	}
	for i := id; i <= id+overflow; i++ {
		if prev, ok := in.owner[i]; ok {
			in.problem("%s: page %d overlaps page %d of %s", where, id, i, prev)
			return nil
		}
		in.owner[i] = where
	}
	if overflow > 0 {
		b = append(b, make([]byte, overflow*ps)...)
		if _, err := in.r.ReadAt(b[ps:], int64((id+1)*ps)); err != nil {
			in.problem("%s: page %d cannot be read: %v", where, id, err)
			return nil
		}
	}
	return b
}

// done takes back a page buffer for another page.
func (in *inspector) done(b []byte) {
	if uint64(len(b)) == in.lay.pageSize {
		in.spare = append(in.spare, b)
	}
}

// freelist checks the freelist page and the page ids it lists.
func (in *inspector) freelist(id uint64) {
	b := in.page(id, "the freelist")
	if b == nil {
		return
	}
	if f := ne.Uint16(b[8:]); f != flagFreelist {
		in.problem("the freelist: page %d is not a freelist page (flags %#x)", id, f)
		return
	}
	count, start := uint64(ne.Uint16(b[10:])), uint64(pageHeaderSize)
	if count == 0xFFFF {
		count, start = ne.Uint64(b[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > uint64(len(b)) || start+count*8 > uint64(len(b)) {
		in.problem("the freelist: page %d lists %d pages, more than it can hold", id, count)
		return
	}
	bad := 0
	for i := uint64(0); i < count; i++ {
		if p := ne.Uint64(b[start+i*8:]); p < 2 || p >= in.lay.pages {
			if bad++; bad <= 3 {
				in.problem("the freelist lists page %d, outside the file's pages (2 to %d)", p, in.lay.pages-1)
			}
		}
	}
	if bad > 3 {
		in.problem("the freelist lists %d more pages outside the file's pages", bad-3)
	}
	in.lay.freePages = int(count)
}

// bucketLabel names a bucket in a problem: "" is the root bucket.
func bucketLabel(name string) string {
	if name == "" {
		return "the root bucket"
	}
	return "bucket " + name
}

// walk checks the page id of bucket's tree and, with descend, the pages below it. Buckets found
// on its leaves are walked with descend when the inspection is full; the root bucket (name "")
// is always walked whole, so that every bucket's root page is checked.
func (in *inspector) walk(id uint64, bucket string, descend bool, depth int) {
	where := bucketLabel(bucket)
	if depth > maxTreeDepth {
		in.problem("%s: its tree is more than %d levels deep at page %d", where, maxTreeDepth, id)
		return
	}
	b := in.page(id, where)
	if b == nil {
		return
	}
	defer in.done(b)
	flags, count := ne.Uint16(b[8:]), int(ne.Uint16(b[10:]))
	switch flags {
	case flagBranch:
		if count == 0 || pageHeaderSize+count*elementSize > len(b) {
			in.problem("%s: branch page %d has %d elements, which its page cannot hold", where, id, count)
			return
		}
		for i := 0; i < count; i++ {
			e := pageHeaderSize + i*elementSize
			pos, ksize, child := int(ne.Uint32(b[e:])), int(ne.Uint32(b[e+4:])), ne.Uint64(b[e+8:])
			if e+pos < pageHeaderSize+count*elementSize || e+pos+ksize > len(b) {
				in.problem("%s: branch page %d: element %d points outside its page", where, id, i)
				return
			}
			if !descend {
				if child < 2 || child >= in.lay.pages {
					in.problem("%s: branch page %d names page %d, outside the file's pages (2 to %d)", where, id, child, in.lay.pages-1)
				}
				continue
			}
			in.walk(child, bucket, descend, depth+1)
		}
	case flagLeaf:
		in.leaf(b, fmt.Sprintf("leaf page %d", id), bucket, descend, depth)
	default:
		in.problem("%s: page %d is not a branch or leaf page (flags %#x): it has been overwritten", where, id, flags)
	}
}

// leaf checks the elements of a leaf page (or an inline bucket's page) and walks the buckets it
// holds.
func (in *inspector) leaf(b []byte, what, bucket string, descend bool, depth int) {
	where := bucketLabel(bucket)
	count := int(ne.Uint16(b[10:]))
	if pageHeaderSize+count*elementSize > len(b) {
		in.problem("%s: %s has %d elements, which it cannot hold", where, what, count)
		return
	}
	for i := 0; i < count; i++ {
		e := pageHeaderSize + i*elementSize
		flags, pos := ne.Uint32(b[e:]), int(ne.Uint32(b[e+4:]))
		ksize, vsize := int(ne.Uint32(b[e+8:])), int(ne.Uint32(b[e+12:]))
		start := e + pos
		if flags > 1 || start < pageHeaderSize+count*elementSize || start+ksize+vsize > len(b) || start+ksize+vsize < start {
			in.problem("%s: %s: element %d is not valid (it points outside the page or has unknown flags)", where, what, i)
			return
		}
		if flags == 0 {
			continue
		}
		name := bucketName(b[start : start+ksize])
		if bucket != "" {
			name = bucket + "/" + name
		}
		v := b[start+ksize : start+ksize+vsize]
		if len(v) < bucketHeader {
			in.problem("%s: %s: bucket %s has a %d-byte header, not %d", where, what, name, len(v), bucketHeader)
			continue
		}
		root := ne.Uint64(v)
		if root != 0 {
			in.walk(root, name, in.full, depth+1)
			continue
		}
		page := v[bucketHeader:]
		if len(page) < pageHeaderSize || ne.Uint16(page[8:]) != flagLeaf {
			in.problem("%s: %s: the inline bucket %s is not a leaf page", where, what, name)
			continue
		}
		in.leaf(page, "its inline page", name, descend, depth+1)
	}
}

// bucketName prints a bucket's name: as is when it is printable, else in hex.
func bucketName(k []byte) string {
	for _, r := range string(k) {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			return fmt.Sprintf("%x", k)
		}
	}
	return string(k)
}

// preflight inspects the database file at path before bbolt opens it, holding the file's lock
// meanwhile (shared for reading, exclusive for writing) so that no writer changes it under the
// reads. A missing file is fine (Open creates it); a lock held by another process is ErrLocked.
func preflight(path string, full, exclusive bool, timeout time.Duration) (*fileLayout, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	if st.IsDir() {
		return nil, &DamagedError{Path: path, Problems: []string{"it is a directory"}}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	defer f.Close()
	if err := lockFile(f, exclusive, timeout); err != nil {
		return nil, err
	}
	// The size is read again under the lock: a writer may have grown the file meanwhile.
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	lay, problems, more := inspect(f, st.Size(), full)
	if len(problems) > 0 {
		return lay, &DamagedError{Path: path, Problems: problems, More: more}
	}
	return lay, nil
}

// openBolt opens the file with bbolt, turning what bbolt panics on and memory faults into a
// DamagedError, as are bbolt's own errors about the file's format.
func openBolt(path string, o *bolt.Options) (db *bolt.DB, err error) {
	err = guard(path, func() error {
		var oerr error
		db, oerr = bolt.Open(path, 0o600, o)
		return oerr
	})
	if errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum) || errors.Is(err, bolterrors.ErrVersionMismatch) {
		return nil, &DamagedError{Path: path, Problems: []string{"bbolt cannot open it: " + err.Error()}}
	}
	return db, err
}

// guard runs fn with memory faults turned into panics, and a panic into a DamagedError of path.
// bbolt panics (or faults) on pages whose contents lie; nothing else in fn is expected to.
func guard(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{Path: path, Problems: []string{"bbolt failed reading it: " + strings.TrimSpace(fmt.Sprint(r))}}
		}
	}()
	return fn()
}
