package app

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/heraldhq/herald/persistence/blob"
)

// MediaConfig configures media storage and limits (docs/media.md).
type MediaConfig struct {
	// MaxImageBytes and MaxVideoBytes are the largest uploads accepted (defaults 50 MiB and
	// 500 MiB).
	MaxImageBytes int64
	MaxVideoBytes int64
	// S3, when set, stores media in an S3-compatible bucket; nil stores files under DIR/media.
	S3 *blob.S3Config
	// URLTTL is how long a signed media file URL works (default 24h).
	URLTTL time.Duration
	// UploadMinRate is the slowest local upload taken, in bytes a second (default
	// blob.DefaultUploadMinRate); MinFreeBytes the space local uploads leave free (default
	// blob.DefaultMinFreeBytes; negative: no floor). blob.Options says how they apply.
	UploadMinRate int64
	MinFreeBytes  int64
	// JanitorInterval is how often unconfirmed uploads older than 24 hours are deleted (default
	// 10m; negative: never, for tests that sweep themselves).
	JanitorInterval time.Duration
	// Now is the media clock: upload and file URL expiries and the janitor (default time.Now).
	Now func() time.Time
}

// Media is the media flow (presign, upload, confirm, files, resolution for publishing) and its
// janitor.
type Media struct {
	*blob.Service
	interval time.Duration
	// UploadOrigin is where browsers PUT presigned uploads when it is not Herald itself (S3):
	// the dashboard's policy allows it in connect-src.
	UploadOrigin string
}

// connectSources are the origins the dashboard's policy adds to connect-src.
func (m *Media) connectSources() []string {
	if m == nil || m.UploadOrigin == "" {
		return nil
	}
	return []string{m.UploadOrigin}
}

// newMedia builds the media flow on the configured backend. An S3 bucket is checked now, so that
// a wrong endpoint, bucket or credentials stop Herald at start rather than at the first upload.
func newMedia(a *App) (*Media, error) {
	cfg := a.Cfg.Media
	key, err := blob.LoadOrCreateKey(a.Cfg.DataDir)
	if err != nil {
		return nil, err
	}
	signer := blob.NewSigner(key)
	baseURL := func() string { return a.Cfg.BaseURL }
	var store blob.Store
	var uploadOrigin string
	if cfg.S3 != nil {
		s3, err := blob.NewS3(*cfg.S3)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := s3.Check(ctx); err != nil {
			return nil, fmt.Errorf("media storage: %w", err)
		}
		if uploadOrigin, err = s3.UploadOrigin(ctx); err != nil {
			return nil, fmt.Errorf("media storage: %w", err)
		}
		store = s3
	} else {
		local, err := blob.NewLocal(filepath.Join(a.Cfg.DataDir, "media"), signer, baseURL)
		if err != nil {
			return nil, err
		}
		store = local
	}
	svc, err := blob.NewService(blob.Options{
		Store: a.Store, Blob: store, Signer: signer, BaseURL: baseURL,
		Limits: blob.Limits{MaxImageBytes: cfg.MaxImageBytes, MaxVideoBytes: cfg.MaxVideoBytes},
		URLTTL: cfg.URLTTL, Now: cfg.Now, Log: a.Log, UploadMinRate: cfg.UploadMinRate, MinFreeBytes: cfg.MinFreeBytes,
	})
	if err != nil {
		return nil, err
	}
	interval := cfg.JanitorInterval
	if interval == 0 {
		interval = 10 * time.Minute
	}
	return &Media{Service: svc, interval: interval, UploadOrigin: uploadOrigin}, nil
}

// JanitorKind is the media janitor's kind among the loops that run once across nodes
// (cluster.Singletons).
const JanitorKind = "media-janitor"

// janitor is the janitor's loop, nil when it never runs (no media storage, or a negative
// interval).
func (m *Media) janitor() func(context.Context) {
	if m == nil || m.interval < 0 {
		return nil
	}
	return func(ctx context.Context) { m.RunJanitor(ctx, m.interval) }
}
