package account

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Rate budget micro-benchmarks (`make bench-micro`): the cost of one Budgets.Reserve, which every
// publish pays under the budgets' single lock.

// BenchmarkBudgetsReserve measures one reservation on one account: granted (room left in every
// window) and refused (a window is spent; the answer says when to retry).
func BenchmarkBudgetsReserve(b *testing.B) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b.Run("granted", func(b *testing.B) {
		// Bluesky has two rules (hourly and daily writes); limits scaled so they never run out.
		bud := NewBudgets(ScaleRules(DefaultRules, 1e6))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if ok, _ := bud.Reserve(platforms.Bluesky, "acct", now); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("refused", func(b *testing.B) {
		bud := NewBudgets(DefaultRules)
		for {
			if ok, _ := bud.Reserve(platforms.X, "acct", now); !ok {
				break
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if ok, _ := bud.Reserve(platforms.X, "acct", now); ok {
				b.Fatal("granted")
			}
		}
	})
}

// BenchmarkBudgetsReserveParallel measures reservations from concurrent account actors: 300
// accounts over the nine networks, every caller on its own accounts, all sharing one Budgets.
func BenchmarkBudgetsReserveParallel(b *testing.B) {
	bud := NewBudgets(ScaleRules(DefaultRules, 1e6))
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	const accounts = 300
	ids := make([]string, accounts)
	for i := range ids {
		ids[i] = "acct-" + strconv.Itoa(i)
	}
	var caller atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(caller.Add(1)) * 37
		for pb.Next() {
			i++
			p := platforms.All[i%len(platforms.All)]
			if ok, _ := bud.Reserve(p, ids[i%accounts], now); !ok {
				b.Error("refused")
				return
			}
		}
	})
}
