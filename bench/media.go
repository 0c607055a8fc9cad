package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// mediaVideoBytes is the size of the bench video: 200 MB.
const mediaVideoBytes = 200_000_000

// mediaUpload measures the local backend's upload route — PUT upload_url with a 200 MB video,
// streamed to disk and fsynced — in MB/s, beside a raw disk write of the same file on the same
// filesystem in the same run (1 MiB writes and one fsync: what the route does without HTTP). It
// also samples the server's resident memory during the uploads: the body is streamed, so memory
// must stay flat however large the file.
func mediaUpload(e *Env) (Result, error) {
	runs := 7
	if e.Quick {
		runs = 1
	}
	src := filepath.Join(e.Dir, "bench-video.mp4")
	if err := writeVideo(src); err != nil {
		return Result{}, err
	}
	defer os.Remove(src)
	client := &http.Client{Transport: &http.Transport{}}
	var upload, raw []time.Duration
	var rssBefore, rssPeak float64
	measureUpload := func() error {
		syscall.Sync()
		before := float64(readVmRSS(e.cmd.Process.Pid)) / 1024
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var peak float64
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				if mb := float64(readVmRSS(e.cmd.Process.Pid)) / 1024; mb > peak {
					peak = mb
				}
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		d, stored, err := e.uploadVideo(client, src)
		close(stop)
		wg.Wait()
		if err != nil {
			return err
		}
		// Like the raw copy, the uploaded file goes once measured, so that every measurement
		// writes to a disk in the same state.
		_ = os.Remove(stored)
		upload = append(upload, d)
		if rssBefore == 0 || before < rssBefore {
			rssBefore = before
		}
		rssPeak = max(rssPeak, peak)
		return nil
	}
	measureRaw := func() error {
		// Each measurement starts on a quiet disk: nothing of the previous one is still being
		// written back.
		syscall.Sync()
		d, err := rawWrite(src, filepath.Join(e.Dir, "bench-raw-copy.mp4"))
		raw = append(raw, d)
		return err
	}
	for i := 0; i < runs; i++ {
		fmt.Fprintf(e.log, "media-upload: run %d/%d\n", i+1, runs)
		// Alternate the order, so that neither side always follows the other.
		first, second := measureRaw, measureUpload
		if i%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return Result{}, err
		}
		if err := second(); err != nil {
			return Result{}, err
		}
	}
	mbps := func(ds []time.Duration) float64 {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return float64(mediaVideoBytes) / 1e6 / ds[len(ds)/2].Seconds()
	}
	fmt.Fprintf(e.log, "media-upload: uploads %v; raw writes %v\n", upload, raw)
	up, lim := mbps(upload), mbps(raw)
	total := time.Duration(0)
	for _, d := range upload {
		total += d
	}
	r := Result{
		Ops: runs, Seconds: total.Seconds(), Throughput: up,
		P50ms:     float64(upload[len(upload)/2]) / float64(time.Millisecond),
		P99ms:     float64(upload[len(upload)-1]) / float64(time.Millisecond),
		P999ms:    float64(upload[len(upload)-1]) / float64(time.Millisecond),
		LimitName: "raw disk write, same file (MB/s)",
		Limit:     lim,
		Notes: fmt.Sprintf("throughput and limit in MB/s (median of %d uploads of a %d MB video through PUT upload_url, local backend, fsynced; latencies per upload); "+
			"server RSS %.0f MB before the upload, %.0f MB at most during it (+%.0f MB for a %d MB body: streamed, not held)",
			runs, mediaVideoBytes/1_000_000, rssBefore, rssPeak, rssPeak-rssBefore, mediaVideoBytes/1_000_000),
	}
	return r, nil
}

// writeVideo writes the bench video: an MP4 header, then pseudo-random bytes.
func writeVideo(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	written := 0
	for written < mediaVideoBytes {
		for i := 0; i+8 <= len(buf); i += 8 {
			v := rng.Uint64()
			for j := 0; j < 8; j++ {
				buf[i+j] = byte(v >> (8 * j))
			}
		}
		if written == 0 {
			copy(buf, "\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom")
		}
		n := min(len(buf), mediaVideoBytes-written)
		if _, err := f.Write(buf[:n]); err != nil {
			return err
		}
		written += n
	}
	return f.Sync()
}

// rawWrite copies src to dst with 1 MiB writes and one fsync, and removes dst.
func rawWrite(src, dst string) (time.Duration, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	start := time.Now()
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	defer os.Remove(dst)
	buf := make([]byte, 1<<20)
	for {
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				_ = out.Close()
				return 0, err
			}
		}
		if rerr != nil {
			break
		}
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return 0, err
	}
	if err := out.Close(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// uploadVideo presigns, PUTs the file (timed) and confirms.
func (e *Env) uploadVideo(client *http.Client, path string) (time.Duration, string, error) {
	post := func(route string, body any, want int, out any) error {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, e.URL+route, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+e.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.Client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			return fmt.Errorf("POST %s: %s %s", route, resp.Status, strings.TrimSpace(string(b)))
		}
		return json.Unmarshal(b, out)
	}
	var p struct {
		UploadURL       string `json:"upload_url"`
		Key             string `json:"key"`
		StorageFilename string `json:"storage_filename"`
	}
	if err := post("/v1/media/presign", map[string]any{"filename": "bench.mp4", "content_type": "video/mp4", "size_bytes": mediaVideoBytes}, 200, &p); err != nil {
		return 0, "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, p.UploadURL, f)
	req.ContentLength = mediaVideoBytes
	req.Header.Set("Content-Type", "video/mp4")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return 0, "", fmt.Errorf("PUT upload_url: %s", resp.Status)
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := post("/v1/media/confirm", map[string]any{"key": p.Key, "storage_filename": p.StorageFilename, "original_filename": "bench.mp4",
		"content_type": "video/mp4", "size_bytes": mediaVideoBytes}, 201, &m); err != nil {
		return 0, "", err
	}
	return d, filepath.Join(e.Dir, "data", "media", filepath.FromSlash(p.Key)), nil
}

func readVmRSS(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			if f := strings.Fields(l); len(f) >= 2 {
				n, _ := strconv.Atoi(f[1])
				return n
			}
		}
	}
	return 0
}
