package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config configures the S3-compatible backend (AWS S3, Cloudflare R2, MinIO, versitygw...).
type S3Config struct {
	// Endpoint is the URL Herald reaches the service at, e.g. https://s3.eu-west-1.amazonaws.com
	// or http://127.0.0.1:7070 (no scheme means https).
	Endpoint string
	// PublicEndpoint is the URL clients upload to, when it differs from Endpoint (Herald behind
	// a private network address of the service). Upload URLs are signed for this host, so they
	// are never rewritten afterwards.
	PublicEndpoint string
	Bucket         string
	// Region is required: it is part of every signature, and setting it spares a
	// GetBucketLocation call before each presign.
	Region    string
	AccessKey string
	SecretKey string
	// PathStyle forces path-style addressing (endpoint/bucket/key) instead of the automatic
	// choice (virtual-hosted for AWS, path-style elsewhere).
	PathStyle bool
}

func (c S3Config) validate() error {
	switch {
	case c.Endpoint == "":
		return errors.New("blob: s3: an endpoint is required")
	case c.Bucket == "":
		return errors.New("blob: s3: a bucket is required")
	case c.Region == "":
		return errors.New("blob: s3: a region is required")
	case c.AccessKey == "" || c.SecretKey == "":
		return errors.New("blob: s3: an access key and a secret key are required")
	}
	return nil
}

// S3 stores media in an S3 bucket. Upload URLs are presigned PUTs with the Content-Type and the
// Content-Length signed, so the service itself refuses another type or size; confirm checks the
// object with StatObject all the same.
type S3 struct {
	internal, public *minio.Client
	bucket           string
}

var _ Store = (*S3)(nil)

func s3Client(endpoint string, c S3Config) (*minio.Client, error) {
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("blob: s3: endpoint %q is not an http(s) URL", endpoint)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("blob: s3: endpoint %q must not have a path", endpoint)
	}
	opts := &minio.Options{
		Creds:  credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure: u.Scheme == "https",
		Region: c.Region,
	}
	if c.PathStyle {
		opts.BucketLookup = minio.BucketLookupPath
	}
	return minio.New(u.Host, opts)
}

// NewS3 builds the backend; it makes no network call (see Check).
func NewS3(c S3Config) (*S3, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	internal, err := s3Client(c.Endpoint, c)
	if err != nil {
		return nil, err
	}
	public := internal
	if c.PublicEndpoint != "" {
		if public, err = s3Client(c.PublicEndpoint, c); err != nil {
			return nil, err
		}
	}
	return &S3{internal: internal, public: public, bucket: c.Bucket}, nil
}

// Check verifies that the bucket exists and the credentials can reach it.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.internal.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("blob: s3: bucket %s: %w", s.bucket, err)
	}
	if !ok {
		return fmt.Errorf("blob: s3: bucket %s does not exist", s.bucket)
	}
	return nil
}

// Name is "s3".
func (s *S3) Name() string { return "s3" }

// UploadOrigin is the origin (scheme://host[:port]) of the URLs PresignPut hands out, which a
// browser's upload connects to: the public endpoint, or the bucket's virtual host under it.
// Presigning makes no request.
func (s *S3) UploadOrigin(ctx context.Context) (string, error) {
	u, err := s.public.PresignHeader(ctx, http.MethodPut, s.bucket, "origin", time.Minute, nil, nil)
	if err != nil {
		return "", fmt.Errorf("blob: s3: presign: %w", err)
	}
	return u.Scheme + "://" + u.Host, nil
}

// PresignPut presigns a PUT against the public endpoint, with Content-Type and Content-Length
// among the signed headers.
func (s *S3) PresignPut(ctx context.Context, key, contentType string, size int64, expires time.Time) (string, error) {
	if !ValidKey(key) {
		return "", ErrBadKey
	}
	ttl := time.Until(expires).Round(time.Second)
	if ttl < time.Second {
		ttl = time.Second
	}
	h := http.Header{}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	u, err := s.public.PresignHeader(ctx, http.MethodPut, s.bucket, key, ttl, nil, h)
	if err != nil {
		return "", fmt.Errorf("blob: s3: presign: %w", err)
	}
	return u.String(), nil
}

func s3Error(op string, err error) error {
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchKey", "NotFound":
		return ErrNotFound
	}
	return fmt.Errorf("blob: s3: %s: %w", op, err)
}

// Stat describes the object with StatObject.
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	if !storable(key) {
		return Info{}, ErrBadKey
	}
	oi, err := s.internal.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s3Error("stat", err)
	}
	return Info{Size: oi.Size, ContentType: oi.ContentType, ModTime: oi.LastModified}, nil
}

// Open opens the object; reads and seeks become ranged GETs.
func (s *S3) Open(ctx context.Context, key string) (Object, Info, error) {
	if !storable(key) {
		return nil, Info{}, ErrBadKey
	}
	o, err := s.internal.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Info{}, s3Error("get", err)
	}
	oi, err := o.Stat()
	if err != nil {
		_ = o.Close()
		return nil, Info{}, s3Error("get", err)
	}
	return o, Info{Size: oi.Size, ContentType: oi.ContentType, ModTime: oi.LastModified}, nil
}

// Delete removes the object.
func (s *S3) Delete(ctx context.Context, key string) error {
	if !storable(key) {
		return ErrBadKey
	}
	if err := s.internal.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(s3Error("delete", err), ErrNotFound) {
			return nil
		}
		return s3Error("delete", err)
	}
	return nil
}

// Put stores a derived file with PutObject, its content type recorded.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if !storable(key) {
		return ErrBadKey
	}
	if _, err := s.internal.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{ContentType: contentType}); err != nil {
		return s3Error("put", err)
	}
	return nil
}
