package x

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// chunkSize is the size of one append segment (X takes up to 5 MB).
const chunkSize = 4 << 20

// maxPollWait bounds the wait between two STATUS polls.
const maxPollWait = 10 * time.Second

// processingInfo is X's asynchronous processing state of an upload.
type processingInfo struct {
	State          string `json:"state"`
	CheckAfterSecs int    `json:"check_after_secs"`
	Error          *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"error"`
}

// uploadMedia uploads one file with the chunked upload v2 (initialize, append per 4 MB segment,
// finalize) and waits until X has processed it; it returns the media id.
func (a *Adapter) uploadMedia(ctx context.Context, token string, m platforms.Media) (string, error) {
	category, limit, _ := mediaCategory(m.ContentType)
	return a.uploadMediaAs(ctx, token, m, category, limit)
}

// uploadMediaAs is uploadMedia with the media_category and size limit given, for the dm_*
// categories of direct message attachments.
func (a *Adapter) uploadMediaAs(ctx context.Context, token string, m platforms.Media, category string, limit int64) (string, error) {
	if m.Open == nil {
		return "", platforms.Errorf(platforms.X, platforms.Permanent, 0, "media %s has no content", m.Filename)
	}
	rc, err := m.Open(ctx)
	if err != nil {
		return "", &platforms.Error{Platform: platforms.X, Kind: platforms.Transient, Message: "reading the media failed", Err: err}
	}
	defer rc.Close()
	src := io.Reader(rc)
	total := m.Size
	if total <= 0 {
		// The size is needed up front: read the file to learn it.
		data, err := io.ReadAll(io.LimitReader(rc, limit+1))
		if err != nil {
			return "", &platforms.Error{Platform: platforms.X, Kind: platforms.Transient, Message: "reading the media failed", Err: err}
		}
		if int64(len(data)) > limit {
			return "", invalid("media is over %d bytes; X allows %d for %s", limit, limit, m.ContentType)
		}
		total, src = int64(len(data)), bytes.NewReader(data)
	}

	raw, _ := json.Marshal(map[string]any{"media_type": m.ContentType, "total_bytes": total, "media_category": category})
	var init struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.upload + "/2/media/upload/initialize", Body: raw, ContentType: "application/json", Bearer: token}, &init); err != nil {
		return "", err
	}
	id := init.Data.ID
	if id == "" {
		return "", platforms.Errorf(platforms.X, platforms.Transient, 0, "media initialize answered without an id")
	}

	buf := make([]byte, chunkSize)
	var sent int64
	for segment := 0; sent < total; segment++ {
		n, err := io.ReadFull(src, buf[:min(int64(chunkSize), total-sent)])
		if err != nil {
			return "", &platforms.Error{Platform: platforms.X, Kind: platforms.Permanent, Message: fmt.Sprintf("media is shorter than its declared %d bytes", total), Err: err}
		}
		body, ct := segmentBody(segment, buf[:n])
		if err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.upload + "/2/media/upload/" + url.PathEscape(id) + "/append", Body: body, ContentType: ct, Bearer: token}, nil); err != nil {
			return "", err
		}
		sent += int64(n)
	}
	if n, _ := src.Read(buf[:1]); n > 0 {
		return "", platforms.Errorf(platforms.X, platforms.Permanent, 0, "media is longer than its declared %d bytes", total)
	}

	var fin struct {
		Data struct {
			ProcessingInfo *processingInfo `json:"processing_info"`
		} `json:"data"`
	}
	if err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.upload + "/2/media/upload/" + url.PathEscape(id) + "/finalize", Bearer: token}, &fin); err != nil {
		return "", err
	}
	return id, a.waitProcessed(ctx, token, id, fin.Data.ProcessingInfo)
}

// segmentBody is the multipart body of one append: segment_index and the media bytes.
func segmentBody(index int, chunk []byte) ([]byte, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("segment_index", strconv.Itoa(index))
	part, _ := w.CreateFormFile("media", "blob")
	_, _ = part.Write(chunk)
	_ = w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// waitProcessed polls GET /2/media/upload?command=STATUS until processing succeeded; a failed
// processing is Permanent.
func (a *Adapter) waitProcessed(ctx context.Context, token, id string, info *processingInfo) error {
	for info != nil && info.State != "succeeded" {
		switch info.State {
		case "failed":
			msg := "X could not process the media"
			if info.Error != nil && info.Error.Message != "" {
				msg += ": " + info.Error.Message
			}
			return platforms.Errorf(platforms.X, platforms.Permanent, 0, "%s", msg)
		case "pending", "in_progress":
		default:
			return platforms.Errorf(platforms.X, platforms.Transient, 0, "unexpected media processing state %q", info.State)
		}
		wait := a.poll
		if wait <= 0 {
			wait = time.Duration(max(info.CheckAfterSecs, 1)) * time.Second
		}
		if err := platforms.Sleep(ctx, min(wait, maxPollWait)); err != nil {
			return platforms.Stopped(platforms.X, err)
		}
		var st struct {
			Data struct {
				ProcessingInfo *processingInfo `json:"processing_info"`
			} `json:"data"`
		}
		q := url.Values{"command": {"STATUS"}, "media_id": {id}}
		if err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.upload + "/2/media/upload?" + q.Encode(), Bearer: token}, &st); err != nil {
			return err
		}
		if st.Data.ProcessingInfo == nil {
			return platforms.Errorf(platforms.X, platforms.Transient, 0, "media status answered without processing_info")
		}
		info = st.Data.ProcessingInfo
	}
	return nil
}

// call makes an upload-side call (never the post-creating one) and decodes a 2xx answer into out.
func (a *Adapter) call(ctx context.Context, rq platforms.Call, out any) error {
	r, err := platforms.Send(ctx, a.hc, platforms.X, rq)
	if err != nil {
		return err
	}
	if r.Status < 200 || r.Status > 299 {
		return classify(r, false)
	}
	if e := errorBody(r); e != nil {
		var probe struct {
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(r.Body, &probe) != nil || len(probe.Data) == 0 {
			return e
		}
	}
	if out == nil {
		return nil
	}
	return platforms.Decode(platforms.X, r, out, false)
}
