package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// wire is a lean HTTP/1.1 client for the throughput scenarios: one keep-alive connection, each
// request written in one write from bytes assembled in a reused buffer, each response parsed
// only as far as the status, Content-Length (or chunked framing) and body. The load generator
// shares the machine's cores with the server it measures; net/http's client spends several
// times more CPU per request than this, CPU the server would otherwise have. A wire is used by
// one goroutine at a time.
type wire struct {
	host   string // host:port
	auth   string // "Bearer sk_..."; "" sends no Authorization header
	conn   net.Conn
	br     *bufio.Reader
	out    []byte
	body   []byte
	header map[string]string // extra request headers, set by the caller between requests
	// retryAfter is the last response's Retry-After header ("" when it had none).
	retryAfter string
}

func (e *Env) newWire() (*wire, error) {
	u, err := url.Parse(e.URL)
	if err != nil {
		return nil, err
	}
	return &wire{host: u.Host, auth: "Bearer " + e.Key}, nil
}

// wires returns n wires, one per load worker.
func (e *Env) wires(n int) ([]*wire, error) {
	out := make([]*wire, n)
	for i := range out {
		w, err := e.newWire()
		if err != nil {
			return nil, err
		}
		out[i] = w
	}
	return out, nil
}

func closeWires(ws []*wire) {
	for _, w := range ws {
		w.close()
	}
}

func (w *wire) close() {
	if w.conn != nil {
		_ = w.conn.Close()
		w.conn, w.br = nil, nil
	}
}

// do sends one request and returns the status and the body, which is valid until the next call.
// A failed exchange closes the connection; the next call dials again.
func (w *wire) do(method, path string, body []byte) (int, []byte, error) {
	if w.conn == nil {
		c, err := net.DialTimeout("tcp", w.host, 5*time.Second)
		if err != nil {
			return 0, nil, err
		}
		w.conn, w.br = c, bufio.NewReaderSize(c, 16<<10)
	}
	w.out = append(w.out[:0], method...)
	w.out = append(w.out, ' ')
	w.out = append(w.out, path...)
	w.out = append(w.out, " HTTP/1.1\r\nHost: "...)
	w.out = append(w.out, w.host...)
	if w.auth != "" {
		w.out = append(w.out, "\r\nAuthorization: "...)
		w.out = append(w.out, w.auth...)
	}
	for k, v := range w.header {
		w.out = append(w.out, "\r\n"...)
		w.out = append(w.out, k...)
		w.out = append(w.out, ": "...)
		w.out = append(w.out, v...)
	}
	if body != nil {
		w.out = append(w.out, "\r\nContent-Type: application/json\r\nContent-Length: "...)
		w.out = strconv.AppendInt(w.out, int64(len(body)), 10)
	}
	w.out = append(w.out, "\r\n\r\n"...)
	w.out = append(w.out, body...)
	_ = w.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := w.conn.Write(w.out); err != nil {
		w.close()
		return 0, nil, err
	}
	status, b, err := w.readResponse()
	if err != nil {
		w.close()
		return 0, nil, err
	}
	return status, b, nil
}

var errMalformed = errors.New("malformed HTTP response")

// head is what a client needs of a response's head: the status and the body's framing.
type head struct {
	status           int
	length           int // -1 when not given
	chunked, closing bool
	retryAfter       string
}

// readHead reads a response's status line and headers.
func readHead(br *bufio.Reader) (head, error) {
	h := head{length: -1}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return h, err
	}
	// "HTTP/1.1 201 Created\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return h, errMalformed
	}
	if h.status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return h, errMalformed
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return h, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return h, nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return h, errMalformed
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if h.length, err = strconv.Atoi(string(v)); err != nil {
				return h, errMalformed
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			h.chunked = bytes.EqualFold(v, []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			h.closing = bytes.EqualFold(v, []byte("close"))
		case bytes.EqualFold(k, []byte("Retry-After")):
			h.retryAfter = string(v)
		}
	}
}

func (w *wire) readResponse() (int, []byte, error) {
	h, err := readHead(w.br)
	if err != nil {
		return 0, nil, err
	}
	status, length, chunked, closing := h.status, h.length, h.chunked, h.closing
	w.retryAfter = h.retryAfter
	w.body = w.body[:0]
	switch {
	case chunked:
		for {
			line, err := w.br.ReadSlice('\n')
			if err != nil {
				return 0, nil, err
			}
			size, err := strconv.ParseInt(string(bytes.TrimRight(line, "\r\n")), 16, 64)
			if err != nil {
				return 0, nil, errMalformed
			}
			if size == 0 {
				if _, err := w.br.ReadSlice('\n'); err != nil { // the empty trailer
					return 0, nil, err
				}
				break
			}
			if w.body, err = readN(w.br, w.body, int(size)); err != nil {
				return 0, nil, err
			}
			if _, err := w.br.Discard(2); err != nil {
				return 0, nil, err
			}
		}
	case length >= 0:
		if w.body, err = readN(w.br, w.body, length); err != nil {
			return 0, nil, err
		}
	default:
		return 0, nil, fmt.Errorf("%w: no Content-Length", errMalformed)
	}
	if closing {
		w.close()
	}
	return status, w.body, nil
}

func readN(r io.Reader, dst []byte, n int) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	_, err := io.ReadFull(r, dst[start:])
	return dst, err
}

// streamDone opens a job's stream on a connection of its own, the way a lean SSE client does,
// and returns the job's completed_at (from the done event) and the moment that event arrived,
// and late when the done event was the stream's first: the client connected after the job had
// finished, so that the wait it measures is its own connecting, not the delivery. opened is called
// when the first event arrives. Ten thousand of these share the machine with the server; each
// costs a connection, a 4 KiB buffer and a goroutine, nothing more.
func (e *Env) streamDone(jobID string, opened func()) (done, at time.Time, late bool, err error) {
	u, err := url.Parse(e.URL)
	if err != nil {
		return done, at, late, err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return done, at, late, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Minute))
	if _, err := fmt.Fprintf(conn, "GET /v1/jobs/%s/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", jobID, u.Host, e.Key); err != nil {
		return done, at, late, err
	}
	br := bufio.NewReaderSize(conn, 4<<10)
	h, err := readHead(br)
	if err != nil {
		return done, at, late, err
	}
	if h.status != http.StatusOK {
		return done, at, late, fmt.Errorf("stream: status %d", h.status)
	}
	body := br
	if h.chunked { // a stream served in place, not taken over from the HTTP server
		body = bufio.NewReader(httputil.NewChunkedReader(br))
	}
	event, first := "", true
	var long []byte
	for {
		line, err := body.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a line longer than the buffer: gather it
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = body.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			return done, at, late, fmt.Errorf("stream ended before done: %w", err)
		}
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			event = string(bytes.TrimSpace(line[len("event: "):]))
		case bytes.HasPrefix(line, []byte("data: ")):
			if first {
				first, late = false, event == "done"
				if opened != nil {
					opened()
				}
			}
			if event != "done" {
				continue
			}
			at = time.Now()
			const key = `"completed_at":"`
			i := bytes.Index(line, []byte(key))
			if i < 0 {
				return done, at, late, fmt.Errorf("done without completed_at")
			}
			rest := line[i+len(key):]
			done, err = time.Parse(time.RFC3339Nano, string(rest[:bytes.IndexByte(rest, '"')]))
			return done, at, late, err
		}
	}
}
