package window

import (
	"fmt"

	"github.com/weirproject/weir/stream"
)

// tagged carries an element of either join input through one window
// operator.
type tagged[A, B any] struct {
	IsLeft bool
	Left   A
	Right  B
}

// Join joins two keyed streams in windows, as Flink's window join: for
// every window and key, join is called for every pair of a left and a
// right element that fell into the window (an inner join; a window with
// elements on one side only produces nothing). Results carry the window's
// max timestamp. The assigner may be any (tumbling, sliding, session);
// lateness and triggers are the defaults.
func Join[K comparable, A, B, OUT any](left *stream.KeyedStream[K, A], right *stream.KeyedStream[K, B], a AssignerBase, join func(l A, r B, out stream.Collector[OUT])) *stream.Stream[OUT] {
	lk, rk := left.KeySelector(), right.KeySelector()
	l := stream.Map(left.Stream(), func(v A) tagged[A, B] { return tagged[A, B]{IsLeft: true, Left: v} }).Name("Join left")
	r := stream.Map(right.Stream(), func(v B) tagged[A, B] { return tagged[A, B]{Right: v} }).Name("Join right")
	keyed := stream.KeyBy(stream.Union(l, r), func(t tagged[A, B]) K {
		if t.IsLeft {
			return lk(t.Left)
		}
		return rk(t.Right)
	})
	return Process(Of(keyed, a), ProcessWindowFunc[K, tagged[A, B], OUT](func(_ K, _ *ProcessContext, elements []tagged[A, B], out stream.Collector[OUT]) error {
		for _, x := range elements {
			if !x.IsLeft {
				continue
			}
			for _, y := range elements {
				if !y.IsLeft {
					join(x.Left, y.Right, out)
				}
			}
		}
		return nil
	}))
}

// String names a tagged element in errors.
func (t tagged[A, B]) String() string {
	if t.IsLeft {
		return fmt.Sprintf("left %v", t.Left)
	}
	return fmt.Sprintf("right %v", t.Right)
}
