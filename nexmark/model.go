// Package nexmark is the Nexmark benchmark for weir: a deterministic,
// parallel generator of the online-auction events of the Nexmark suite
// (people, auctions and bids, as in github.com/nexmark/nexmark) and
// queries over them written with weir's public API, each with a
// hand-written single-goroutine loop that computes the same result.
//
//	env := stream.NewEnvironmentWithConfig(cfg)
//	events := nexmark.Events(env, nexmark.DefaultConfig(), 1_000_000)
//	stream.Print(nexmark.Q1(events))
//	err := env.Execute(ctx, "nexmark-q1")
//
// Event i is a pure function of (Config.Seed, i): the source's splits
// generate their indices in parallel, and a split's position is a number,
// so the source is checkpointable. Event time follows the generator's
// clock: event i happens at BaseTime + i·1000/FirstEventRate ms.
package nexmark

import (
	"fmt"
)

// Kind says which of Person, Auction and Bid an Event holds.
type Kind uint8

// The kinds of events.
const (
	PersonKind Kind = iota
	AuctionKind
	BidKind
)

func (k Kind) String() string {
	switch k {
	case PersonKind:
		return "person"
	case AuctionKind:
		return "auction"
	case BidKind:
		return "bid"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Person is a new person registering to the auction site. DateTime is in
// milliseconds since the epoch, as all times of this package.
type Person struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	EmailAddress string `json:"emailAddress"`
	CreditCard   string `json:"creditCard"`
	City         string `json:"city"`
	State        string `json:"state"`
	DateTime     int64  `json:"dateTime"`
	Extra        string `json:"extra"`
}

// Auction is a new auction: Seller is a Person ID.
type Auction struct {
	ID          int64  `json:"id"`
	ItemName    string `json:"itemName"`
	Description string `json:"description"`
	InitialBid  int64  `json:"initialBid"`
	Reserve     int64  `json:"reserve"`
	DateTime    int64  `json:"dateTime"`
	Expires     int64  `json:"expires"`
	Seller      int64  `json:"seller"`
	Category    int64  `json:"category"`
	Extra       string `json:"extra"`
}

// Bid is a bid of Bidder (a Person ID) on an Auction (an Auction ID).
type Bid struct {
	Auction  int64  `json:"auction"`
	Bidder   int64  `json:"bidder"`
	Price    int64  `json:"price"`
	Channel  string `json:"channel"`
	URL      string `json:"url"`
	DateTime int64  `json:"dateTime"`
	Extra    string `json:"extra"`
}

// Event is one Nexmark event: Kind says which one of Person, Auction and
// Bid is set; the others are nil.
type Event struct {
	Kind    Kind     `json:"kind"`
	Person  *Person  `json:"person,omitempty"`
	Auction *Auction `json:"auction,omitempty"`
	Bid     *Bid     `json:"bid,omitempty"`
}

// Timestamp is the event's time (its DateTime) in milliseconds.
func (e Event) Timestamp() int64 {
	switch e.Kind {
	case PersonKind:
		return e.Person.DateTime
	case AuctionKind:
		return e.Auction.DateTime
	default:
		return e.Bid.DateTime
	}
}

// IsBid reports whether e is a bid.
func (e Event) IsBid() bool { return e.Kind == BidKind }

// IsAuction reports whether e is an auction.
func (e Event) IsAuction() bool { return e.Kind == AuctionKind }

// IsPerson reports whether e is a person.
func (e Event) IsPerson() bool { return e.Kind == PersonKind }

// MarshalText writes the kind's name, for JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	switch string(b) {
	case "person":
		*k = PersonKind
	case "auction":
		*k = AuctionKind
	case "bid":
		*k = BidKind
	default:
		return fmt.Errorf("nexmark: unknown event kind %q", b)
	}
	return nil
}
