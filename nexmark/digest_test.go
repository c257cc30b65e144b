package nexmark

import "testing"

func TestDigestIsOrderIndependentAndSeesContents(t *testing.T) {
	bids := []Bid{{Auction: 1, Bidder: 2, Price: 3}, {Auction: 4, Bidder: 5, Price: 6}, {Auction: 1, Bidder: 2, Price: 3}}
	digest := func(bs ...Bid) Digest {
		var d Digest
		h := newDigester[Bid]()
		for _, b := range bs {
			h.add(&d, b)
		}
		return d
	}
	a := digest(bids...)
	if b := digest(bids[2], bids[0], bids[1]); a != b {
		t.Fatalf("the digest depends on the order: %v against %v", a, b)
	}
	changed := bids[1]
	changed.Price++
	if b := digest(bids[0], changed, bids[2]); b.Count != a.Count || b.Sum == a.Sum {
		t.Fatalf("a changed price left the digest as it was: %v", b)
	}
	// Duplicates must not cancel out (as they would under XOR).
	if b := digest(bids[1]); b.Sum == a.Sum {
		t.Fatal("two equal results cancelled out")
	}
	// A type the codec does not encode is hashed through its JSON line.
	type withMap struct{ M map[string]int }
	h := newDigester[withMap]()
	var x, y Digest
	h.add(&x, withMap{map[string]int{"a": 1}})
	h.add(&y, withMap{map[string]int{"a": 2}})
	if x.Sum == y.Sum {
		t.Fatal("the JSON fallback does not see the contents")
	}
}
