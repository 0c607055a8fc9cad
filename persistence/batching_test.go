package persistence

import (
	"testing"
	"time"
)

func TestCommitterLingersOnlyUnderConcurrentLoad(t *testing.T) {
	var b batching
	for range 50 {
		b.observe(1, 2*time.Millisecond)
	}
	if wait, _ := b.linger(1024); wait != 0 {
		t.Fatalf("a lone writer waits %v before its commit", wait)
	}
	for range 200 {
		b.observe(20, 1200*time.Microsecond)
	}
	wait, want := b.linger(1024)
	if wait <= 0 || wait > 610*time.Microsecond {
		t.Fatalf("under load the committer lingers %v, want (0, half the commit time]", wait)
	}
	if want < 30 || want > 41 {
		t.Fatalf("it waits for %d writes, want about twice the recent batch of 20", want)
	}
	if _, want := b.linger(16); want != 16 {
		t.Fatalf("it waits for %d writes, beyond MaxBatch 16", want)
	}
	for range 50 {
		b.observe(64, 20*time.Millisecond)
	}
	if wait, _ := b.linger(1024); wait != maxLinger {
		t.Fatalf("a slow disk makes it linger %v, beyond maxLinger", wait)
	}
}
