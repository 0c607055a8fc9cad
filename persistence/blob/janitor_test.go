package blob_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
)

func (e *env) stored(t *testing.T, key string) bool {
	t.Helper()
	_, err := e.blob.Stat(context.Background(), key)
	if errors.Is(err, blob.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

func (e *env) putPost(t *testing.T, status string, media ...string) {
	t.Helper()
	p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: e.user, Content: "x", Status: status, CreatedAt: time.Now(), MediaIDs: media}
	require.NoError(t, e.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }))
}

// Unconfirmed uploads go after 24 hours — record and bytes — while confirmed media, younger
// uploads and media referenced by a post that is not final stay. No sleeping: the clock moves.
func TestJanitorDeletesUnconfirmedUploadsAfter24Hours(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newLocal(t))
	ctx := context.Background()

	old := e.upload(t, e.user, "image/jpeg", jpegBytes)
	neverUploaded, err := e.svc.Presign(ctx, e.user, "", "n.png", "image/png", 10)
	require.NoError(t, err)
	confirmed, err := e.confirm(t, e.user, e.upload(t, e.user, "image/png", pngBytes), "image/png", len(pngBytes))
	require.NoError(t, err)
	e.putPost(t, persistence.PostDraft, confirmed.ID)
	// Pending media referenced by posts (which the API never allows, but the janitor does not
	// rely on that): a draft's stays, a published post's does not protect it.
	inDraft := e.upload(t, e.user, "video/mp4", mp4Bytes)
	e.putPost(t, persistence.PostScheduled, blob.MediaIDOf(inDraft.StorageFilename))
	inFinal := e.upload(t, e.user, "video/mp4", mp4Bytes)
	e.putPost(t, persistence.PostPublished, blob.MediaIDOf(inFinal.StorageFilename))

	e.clock.Advance(23 * time.Hour)
	young := e.upload(t, e.user, "image/jpeg", jpegBytes)

	n, err := e.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is 24 hours old yet")

	e.clock.Advance(time.Hour)
	n, err = e.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, p := range []*blob.Presigned{old, neverUploaded, inFinal} {
		require.Nil(t, e.record(t, p.Key))
		require.False(t, e.stored(t, p.Key))
	}
	require.NotNil(t, e.record(t, inDraft.Key))
	require.True(t, e.stored(t, inDraft.Key))
	require.True(t, e.stored(t, confirmed.Key))
	require.NotNil(t, e.record(t, young.Key))

	// A deleted upload can no longer be confirmed.
	_, err = e.confirm(t, e.user, old, "image/jpeg", len(jpegBytes))
	require.Equal(t, blob.Invalid, kindOf(t, err))

	// A month later: the young upload is gone too; the confirmed media and the draft's stay.
	e.clock.Advance(30 * 24 * time.Hour)
	n, err = e.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.False(t, e.stored(t, young.Key))
	require.True(t, e.stored(t, confirmed.Key))
	require.True(t, e.stored(t, inDraft.Key))
	_, err = e.svc.Get(e.user, confirmed.ID)
	require.NoError(t, err)
}

// A confirm that commits before the sweep's transaction keeps its media.
func TestJanitorLosesToAConfirm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newLocal(t))
	ctx := context.Background()
	p := e.upload(t, e.user, "image/jpeg", jpegBytes)
	e.clock.Advance(24*time.Hour - time.Second)
	_, err := e.confirm(t, e.user, p, "image/jpeg", len(jpegBytes))
	require.NoError(t, err)
	e.clock.Advance(time.Hour)
	n, err := e.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.True(t, e.stored(t, p.Key))
}

// flakyDelete fails its first deletions, as an unreachable S3 would.
type flakyDelete struct {
	blob.Store
	failures atomic.Int32
}

func (f *flakyDelete) Delete(ctx context.Context, key string) error {
	if f.failures.Add(-1) >= 0 {
		return errors.New("storage unreachable")
	}
	return f.Store.Delete(ctx, key)
}

// Bytes whose deletion fails are retried on the next sweep.
func TestJanitorRetriesFailedDeletions(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	flaky := &flakyDelete{Store: l}
	e := newEnv(t, flaky)
	ctx := context.Background()
	p, err := e.svc.Presign(ctx, e.user, "", "a.jpg", "image/jpeg", int64(len(jpegBytes)))
	require.NoError(t, err)
	_, err = e.svc.Receive(ctx, p.Key, query(t, p.UploadURL), "image/jpeg", -1, readerOf(jpegBytes))
	require.Equal(t, blob.NotFound, kindOf(t, err), "Receive needs the Local backend itself")
	_, err = l.Write(ctx, p.Key, readerOf(jpegBytes), int64(len(jpegBytes)))
	require.NoError(t, err)

	flaky.failures.Store(1)
	e.clock.Advance(25 * time.Hour)
	n, err := e.svc.Sweep(ctx)
	require.Error(t, err)
	require.Equal(t, 1, n, "the record is gone")
	require.Nil(t, e.record(t, p.Key))
	require.True(t, e.stored(t, p.Key), "the bytes are not yet")

	n, err = e.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, e.stored(t, p.Key))
	var orphans []string
	require.NoError(t, e.store.View(func(tx *persistence.Tx) error { orphans = tx.MediaOrphans(10); return nil }))
	require.Empty(t, orphans)
}
