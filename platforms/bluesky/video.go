package bluesky

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// maxPollWait bounds the wait between two getJobStatus polls.
const maxPollWait = 5 * time.Second

// jobStatus is app.bsky.video.defs#jobStatus.
type jobStatus struct {
	JobID       string   `json:"jobId"`
	DID         string   `json:"did"`
	State       string   `json:"state"`
	Progress    int      `json:"progress"`
	Blob        *blobRef `json:"blob"`
	Error       string   `json:"error"`
	Message     string   `json:"message"`
	FailureCode string   `json:"failureCode"`
}

// serviceAuth gets a service token (com.atproto.server.getServiceAuth) for aud and lxm.
func (a *Adapter) serviceAuth(ctx context.Context, c platforms.Credentials, aud, lxm string, ttl time.Duration) (string, error) {
	q := url.Values{"aud": {aud}, "lxm": {lxm}, "exp": {strconv.FormatInt(time.Now().Add(ttl).Unix(), 10)}}
	var out struct {
		Token string `json:"token"`
	}
	if err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.xrpc(c, "com.atproto.server.getServiceAuth") + "?" + q.Encode(), Bearer: c.AccessToken}, &out); err != nil {
		return "", err
	}
	if out.Token == "" {
		return "", platforms.Errorf(platforms.Bluesky, platforms.Transient, 0, "getServiceAuth answered without a token")
	}
	return out.Token, nil
}

// didWeb is the did:web of a service URL's host (a port's colon percent-encoded).
func didWeb(service string) string {
	u, err := url.Parse(service)
	if err != nil || u.Host == "" {
		return "did:web:" + service
	}
	return "did:web:" + strings.ReplaceAll(u.Host, ":", "%3A")
}

// uploadVideo sends a video through the video service, as Bluesky's video tutorial describes:
// check the account's daily upload limits, get a service token for the PDS (lxm
// com.atproto.repo.uploadBlob, 30 minutes), POST the bytes to app.bsky.video.uploadVideo, and poll
// app.bsky.video.getJobStatus until the job has the blob the service stored on the PDS. An
// "already_exists" answer carries the earlier job, whose blob is used.
func (a *Adapter) uploadVideo(ctx context.Context, c platforms.Credentials, m platforms.Media) (*blobRef, error) {
	limitsToken, err := a.serviceAuth(ctx, c, didWeb(a.video), "app.bsky.video.getUploadLimits", 30*time.Minute)
	if err != nil {
		return nil, err
	}
	var limits struct {
		CanUpload bool   `json:"canUpload"`
		Message   string `json:"message"`
		Error     string `json:"error"`
	}
	if err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.video + "/xrpc/app.bsky.video.getUploadLimits", Bearer: limitsToken}, &limits); err != nil {
		return nil, err
	}
	if !limits.CanUpload {
		msg := limits.Message
		if msg == "" {
			msg = "the account cannot upload videos now"
		}
		return nil, &platforms.Error{Platform: platforms.Bluesky, Kind: platforms.Permanent, Code: limits.Error, Message: "Bluesky: " + msg}
	}

	data, err := readMedia(ctx, m, maxVideoBytes)
	if err != nil {
		return nil, err
	}
	token, err := a.serviceAuth(ctx, c, didWeb(a.pds(c)), "com.atproto.repo.uploadBlob", 30*time.Minute)
	if err != nil {
		return nil, err
	}
	name := m.Filename
	if name == "" {
		name = "video.mp4"
	}
	q := url.Values{"did": {c.UserID}, "name": {name}}
	r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodPost, URL: a.video + "/xrpc/app.bsky.video.uploadVideo?" + q.Encode(), Body: data, ContentType: m.ContentType, Bearer: token})
	if err != nil {
		return nil, err
	}
	st, ok := parseJobStatus(r.Body)
	switch {
	case r.OK() && ok:
	case r.Status == http.StatusConflict && ok && st.Error == "already_exists":
	case !r.OK():
		return nil, classify(r, false)
	default:
		if e := errorBody(r); e != nil {
			return nil, e
		}
		return nil, platforms.Garbled(platforms.Bluesky, r, false, nil)
	}
	return a.waitJob(ctx, st)
}

// parseJobStatus reads a job status at the top level of the body (what the video service sends)
// or under "jobStatus" (the lexicon's shape).
func parseJobStatus(body []byte) (jobStatus, bool) {
	var wrapped struct {
		JobStatus *jobStatus `json:"jobStatus"`
	}
	if json.Unmarshal(body, &wrapped) == nil && wrapped.JobStatus != nil && wrapped.JobStatus.JobID != "" {
		return *wrapped.JobStatus, true
	}
	var st jobStatus
	if json.Unmarshal(body, &st) == nil && st.JobID != "" {
		return st, true
	}
	return jobStatus{}, false
}

// waitJob polls getJobStatus until the job has a blob; a failed job is Permanent.
func (a *Adapter) waitJob(ctx context.Context, st jobStatus) (*blobRef, error) {
	for {
		if st.Blob != nil && st.Blob.Ref.Link != "" {
			return st.Blob, nil
		}
		if st.State == "JOB_STATE_FAILED" {
			msg := st.Message
			if msg == "" {
				msg = st.Error
			}
			return nil, &platforms.Error{Platform: platforms.Bluesky, Kind: platforms.Permanent, Code: st.FailureCode, Message: "Bluesky could not process the video: " + msg}
		}
		if st.State == "JOB_STATE_COMPLETED" {
			return nil, platforms.Errorf(platforms.Bluesky, platforms.Transient, 0, "the video job completed without a blob")
		}
		wait := a.poll
		if wait <= 0 {
			wait = time.Second
		}
		if err := platforms.Sleep(ctx, min(wait, maxPollWait)); err != nil {
			return nil, platforms.Stopped(platforms.Bluesky, err)
		}
		r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodGet, URL: a.video + "/xrpc/app.bsky.video.getJobStatus?jobId=" + url.QueryEscape(st.JobID)})
		if err != nil {
			return nil, err
		}
		if !r.OK() {
			return nil, classify(r, false)
		}
		next, ok := parseJobStatus(r.Body)
		if !ok {
			if e := errorBody(r); e != nil {
				return nil, e
			}
			return nil, platforms.Garbled(platforms.Bluesky, r, false, nil)
		}
		st = next
	}
}
