package window_test

import (
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// BenchmarkOperator measures the window operator alone (no job): elements
// of 1000 keys with ascending timestamps, a watermark every 100 elements.
func BenchmarkOperator(b *testing.B) {
	env := stream.NewEnvironmentWithConfig(nil)
	ks := stream.KeyBy(stream.FromSlice(env, []ev{}), func(e ev) int32 { return e.Key })
	for _, c := range []struct {
		name string
		a    window.AssignerBase
	}{
		{"tumbling", window.TumblingEventTime(time.Second)},
		{"sliding-4", window.SlidingEventTime(time.Second, 250*time.Millisecond)},
		{"session", window.EventTimeSession(100 * time.Millisecond)},
	} {
		b.Run(c.name+"/reduce", func(b *testing.B) {
			d, err := window.NewReduceDriver(window.Of(ks, c.a), combine)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				ts := int64(i / 10)
				d.Emit(ev{Key: int32(i % 1000), Cnt: 1, Val: 1, MinTs: ts, MaxTs: ts}, ts)
				if i%100 == 99 {
					d.Watermark(ts - 50)
					d.Out = d.Out[:0]
				}
			}
		})
	}
}
