package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/persistence/blob"
)

// mediaFlags are serve's media flags (docs/media.md).
type mediaFlags struct {
	maxImage, maxVideo, urlTTL              *string
	uploadMinRate, minFree                  *string
	endpoint, publicEndpoint, bucket        *string
	region, accessKey, secretKey, pathStyle *string
}

func addMediaFlags(fs *flag.FlagSet) *mediaFlags {
	return &mediaFlags{
		maxImage: fs.String("media-max-image-bytes", envOr("HERALD_MEDIA_MAX_IMAGE_BYTES", strconv.Itoa(blob.DefaultMaxImageBytes)), "largest image upload in bytes"),
		maxVideo: fs.String("media-max-video-bytes", envOr("HERALD_MEDIA_MAX_VIDEO_BYTES", strconv.Itoa(blob.DefaultMaxVideoBytes)), "largest video upload in bytes"),
		urlTTL:   fs.String("media-url-ttl", envOr("HERALD_MEDIA_URL_TTL", blob.DefaultURLTTL.String()), "lifetime of the signed media file URLs Herald hands out"),
		uploadMinRate: fs.String("media-upload-min-rate", envOr("HERALD_MEDIA_UPLOAD_MIN_RATE", strconv.Itoa(blob.DefaultUploadMinRate)),
			"slowest upload taken, in bytes a second: a PUT to a local upload URL must end within a minute plus its size at this rate"),
		minFree: fs.String("media-min-free-bytes", envOr("HERALD_MEDIA_MIN_FREE_BYTES", strconv.Itoa(blob.DefaultMinFreeBytes)),
			"free space local uploads leave on the media directory's file system; an upload that would leave less is refused (-1: no floor)"),
		endpoint:       fs.String("s3-endpoint", envOr("HERALD_S3_ENDPOINT", ""), "S3-compatible endpoint URL; empty stores media under DIR/media"),
		publicEndpoint: fs.String("s3-public-endpoint", envOr("HERALD_S3_PUBLIC_ENDPOINT", ""), "S3 endpoint URL clients upload to, when it differs from --s3-endpoint"),
		bucket:         fs.String("s3-bucket", envOr("HERALD_S3_BUCKET", ""), "S3 bucket for media"),
		region:         fs.String("s3-region", envOr("HERALD_S3_REGION", ""), "S3 region (required with --s3-endpoint)"),
		accessKey:      fs.String("s3-access-key", envOr("HERALD_S3_ACCESS_KEY", ""), "S3 access key id"),
		secretKey:      fs.String("s3-secret-key", envOr("HERALD_S3_SECRET_KEY", ""), "S3 secret key (prefer the environment variable)"),
		pathStyle:      fs.String("s3-path-style", envOr("HERALD_S3_PATH_STYLE", "false"), "force path-style S3 addressing"),
	}
}

func positiveBytes(flagName, v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("--%s: %q is not a positive number of bytes", flagName, v)
	}
	return n, nil
}

// config turns the flags into the media configuration.
func (f *mediaFlags) config() (app.MediaConfig, error) {
	var c app.MediaConfig
	var err error
	if c.MaxImageBytes, err = positiveBytes("media-max-image-bytes", *f.maxImage); err != nil {
		return c, err
	}
	if c.MaxVideoBytes, err = positiveBytes("media-max-video-bytes", *f.maxVideo); err != nil {
		return c, err
	}
	ttl, err := time.ParseDuration(*f.urlTTL)
	if err != nil || ttl < time.Minute {
		return c, fmt.Errorf("--media-url-ttl: %q is not a duration of at least a minute (e.g. 24h)", *f.urlTTL)
	}
	c.URLTTL = ttl
	if c.UploadMinRate, err = positiveBytes("media-upload-min-rate", *f.uploadMinRate); err != nil {
		return c, err
	}
	floor, err := strconv.ParseInt(strings.TrimSpace(*f.minFree), 10, 64)
	if err != nil || floor < -1 {
		return c, fmt.Errorf("--media-min-free-bytes: %q is not a number of bytes (-1: no floor)", *f.minFree)
	}
	c.MinFreeBytes = floor
	if floor == 0 {
		c.MinFreeBytes = -1 // 0 bytes free is no floor at all
	}
	if *f.endpoint == "" {
		if *f.bucket != "" || *f.publicEndpoint != "" {
			return c, fmt.Errorf("--s3-bucket and --s3-public-endpoint need --s3-endpoint")
		}
		return c, nil
	}
	pathStyle, err := strconv.ParseBool(*f.pathStyle)
	if err != nil {
		return c, fmt.Errorf("--s3-path-style: %q is not a boolean", *f.pathStyle)
	}
	if *f.bucket == "" || *f.region == "" || *f.accessKey == "" || *f.secretKey == "" {
		return c, fmt.Errorf("--s3-endpoint needs --s3-bucket, --s3-region, --s3-access-key and --s3-secret-key")
	}
	c.S3 = &blob.S3Config{
		Endpoint: *f.endpoint, PublicEndpoint: *f.publicEndpoint, Bucket: *f.bucket, Region: *f.region,
		AccessKey: *f.accessKey, SecretKey: *f.secretKey, PathStyle: pathStyle,
	}
	return c, nil
}
