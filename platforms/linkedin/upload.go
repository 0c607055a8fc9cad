package linkedin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// maxPollWait bounds the wait between two video status polls.
const maxPollWait = 10 * time.Second

// open opens a media file.
func open(ctx context.Context, m platforms.Media) (io.ReadCloser, error) {
	if m.Open == nil {
		return nil, platforms.Errorf(platforms.LinkedIn, platforms.Permanent, 0, "media %s has no content", m.Filename)
	}
	rc, err := m.Open(ctx)
	if err != nil {
		return nil, &platforms.Error{Platform: platforms.LinkedIn, Kind: platforms.Transient, Message: "reading the media failed", Err: err}
	}
	return rc, nil
}

// uploadImage registers an image (POST /rest/images?action=initializeUpload) and PUTs its bytes
// to the upload URL LinkedIn returned; it returns the image URN.
func (a *Adapter) uploadImage(ctx context.Context, c platforms.Credentials, m platforms.Media) (string, error) {
	raw, _ := json.Marshal(map[string]any{"initializeUploadRequest": map[string]any{"owner": authorURN(c)}})
	var init struct {
		Value struct {
			UploadURL string `json:"uploadUrl"`
			Image     string `json:"image"`
		} `json:"value"`
	}
	if _, err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.base + "/rest/images?action=initializeUpload", Body: raw, ContentType: "application/json", Bearer: c.AccessToken, Header: a.restHeader()}, &init); err != nil {
		return "", err
	}
	if init.Value.UploadURL == "" || init.Value.Image == "" {
		return "", platforms.Errorf(platforms.LinkedIn, platforms.Transient, 0, "image initializeUpload answered without uploadUrl or image")
	}
	rc, err := open(ctx, m)
	if err != nil {
		return "", err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return "", &platforms.Error{Platform: platforms.LinkedIn, Kind: platforms.Transient, Message: "reading the media failed", Err: err}
	}
	if _, err := a.call(ctx, platforms.Call{Method: http.MethodPut, URL: init.Value.UploadURL, Body: data, ContentType: "application/octet-stream", Bearer: c.AccessToken}, nil); err != nil {
		return "", err
	}
	return init.Value.Image, nil
}

// uploadInstruction is one part of a video upload.
type uploadInstruction struct {
	UploadURL string `json:"uploadUrl"`
	FirstByte int64  `json:"firstByte"`
	LastByte  int64  `json:"lastByte"`
}

// uploadVideo registers a video (initializeUpload with its size), PUTs each part in order and
// collects their ETags, finalizes the upload, and polls GET /rest/videos/{urn} until LinkedIn has
// processed it; it returns the video URN. PROCESSING_FAILED is Permanent.
func (a *Adapter) uploadVideo(ctx context.Context, c platforms.Credentials, m platforms.Media) (string, error) {
	rc, err := open(ctx, m)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	src, size := io.Reader(rc), m.Size
	if size <= 0 {
		// initializeUpload needs the size up front: read the file to learn it.
		data, err := io.ReadAll(io.LimitReader(rc, maxVideoBytes+1))
		if err != nil {
			return "", &platforms.Error{Platform: platforms.LinkedIn, Kind: platforms.Transient, Message: "reading the media failed", Err: err}
		}
		if len(data) > maxVideoBytes {
			return "", invalid("video is over %d bytes; LinkedIn allows %d", maxVideoBytes, maxVideoBytes)
		}
		src, size = bytes.NewReader(data), int64(len(data))
	}

	raw, _ := json.Marshal(map[string]any{"initializeUploadRequest": map[string]any{
		"owner": authorURN(c), "fileSizeBytes": size, "uploadCaptions": false, "uploadThumbnail": false,
	}})
	var init struct {
		Value struct {
			Video              string              `json:"video"`
			UploadInstructions []uploadInstruction `json:"uploadInstructions"`
			UploadToken        string              `json:"uploadToken"`
		} `json:"value"`
	}
	if _, err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.base + "/rest/videos?action=initializeUpload", Body: raw, ContentType: "application/json", Bearer: c.AccessToken, Header: a.restHeader()}, &init); err != nil {
		return "", err
	}
	parts := init.Value.UploadInstructions
	if init.Value.Video == "" || len(parts) == 0 {
		return "", platforms.Errorf(platforms.LinkedIn, platforms.Transient, 0, "video initializeUpload answered without video or uploadInstructions")
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].FirstByte < parts[j].FirstByte })

	etags := make([]string, 0, len(parts))
	var offset int64
	for i, p := range parts {
		if p.FirstByte != offset || p.LastByte < p.FirstByte || p.LastByte >= size {
			return "", platforms.Errorf(platforms.LinkedIn, platforms.Transient, 0, "upload instruction %d covers bytes %d-%d, not from %d", i, p.FirstByte, p.LastByte, offset)
		}
		chunk := make([]byte, p.LastByte-p.FirstByte+1)
		if _, err := io.ReadFull(src, chunk); err != nil {
			return "", &platforms.Error{Platform: platforms.LinkedIn, Kind: platforms.Permanent, Message: fmt.Sprintf("video is shorter than its declared %d bytes", size), Err: err}
		}
		r, err := a.call(ctx, platforms.Call{Method: http.MethodPut, URL: p.UploadURL, Body: chunk, ContentType: "application/octet-stream", Bearer: c.AccessToken}, nil)
		if err != nil {
			return "", err
		}
		etag := r.Header.Get("ETag")
		if etag == "" {
			return "", platforms.Errorf(platforms.LinkedIn, platforms.Transient, 0, "upload of part %d answered without an ETag", i)
		}
		etags = append(etags, etag)
		offset = p.LastByte + 1
	}
	if offset != size {
		return "", platforms.Errorf(platforms.LinkedIn, platforms.Transient, 0, "upload instructions cover %d of %d bytes", offset, size)
	}
	if n, _ := src.Read(make([]byte, 1)); n > 0 {
		return "", platforms.Errorf(platforms.LinkedIn, platforms.Permanent, 0, "video is longer than its declared %d bytes", size)
	}

	raw, _ = json.Marshal(map[string]any{"finalizeUploadRequest": map[string]any{
		"video": init.Value.Video, "uploadToken": init.Value.UploadToken, "uploadedPartIds": etags,
	}})
	if _, err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.base + "/rest/videos?action=finalizeUpload", Body: raw, ContentType: "application/json", Bearer: c.AccessToken, Header: a.restHeader()}, nil); err != nil {
		return "", err
	}
	return init.Value.Video, a.waitAvailable(ctx, c, "videos", init.Value.Video)
}

// waitAvailable polls a video or document (resource "videos" or "documents") until its status is
// AVAILABLE.
func (a *Adapter) waitAvailable(ctx context.Context, c platforms.Credentials, resource, urn string) error {
	wait := a.poll
	if wait <= 0 {
		wait = time.Second
	}
	for {
		var v struct {
			Status string `json:"status"`
		}
		if _, err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.base + "/rest/" + resource + "/" + encodeURN(urn), Bearer: c.AccessToken, Header: a.restHeader()}, &v); err != nil {
			return err
		}
		switch v.Status {
		case "AVAILABLE":
			return nil
		case "PROCESSING_FAILED":
			return platforms.Errorf(platforms.LinkedIn, platforms.Permanent, 0, "LinkedIn could not process the %s", strings.TrimSuffix(resource, "s"))
		case "PROCESSING", "WAITING_UPLOAD":
		default:
			return platforms.Errorf(platforms.LinkedIn, platforms.Transient, 0, "unexpected %s status %q", strings.TrimSuffix(resource, "s"), v.Status)
		}
		if err := platforms.Sleep(ctx, min(wait, maxPollWait)); err != nil {
			return platforms.Stopped(platforms.LinkedIn, err)
		}
	}
}
