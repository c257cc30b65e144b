package nexmark

import (
	"iter"
	"math"
	"strconv"
	"strings"
	"sync"
)

// Config is the generator's configuration, with the fields and defaults
// of the reference NexmarkConfiguration.
type Config struct {
	// Seed makes a different, equally deterministic event sequence.
	Seed uint64
	// FirstEventRate is the rate of events per second of event time.
	FirstEventRate int64
	// BaseTime is the time of event 0, in milliseconds since the epoch.
	BaseTime int64
	// Proportions of people, auctions and bids: 1:3:46.
	PersonProportion, AuctionProportion, BidProportion int64
	// NumActivePeople are the people that new auctions and bids pick from.
	NumActivePeople int64
	// NumInFlightAuctions are the auctions that bids pick from.
	NumInFlightAuctions int64
	// A bid is for a hot auction with probability 1 − 1/HotAuctionRatio,
	// an auction by a hot seller with 1 − 1/HotSellersRatio and a bid by a
	// hot bidder with 1 − 1/HotBiddersRatio.
	HotAuctionRatio, HotSellersRatio, HotBiddersRatio int
	// Average sizes, in bytes, that the Extra padding aims at.
	AvgPersonByteSize, AvgAuctionByteSize, AvgBidByteSize int
}

// The reference generator's constants.
const (
	FirstAuctionID  = 1000
	FirstPersonID   = 1000
	FirstCategoryID = 10

	numCategories      = 5
	auctionIDLead      = 10
	personIDLead       = 10
	hotAuctionBatch    = 100 // HOT_AUCTION_RATIO of BidGenerator
	hotBidderBatch     = 100
	hotSellerBatch     = 100
	hotChannelsRatio   = 2
	channelsNumber     = 10_000
	minStringLength    = 3
	defaultBaseTimeMil = 1_700_000_000_000 // 2023-11-14T22:13:20Z
)

// DefaultConfig is the reference generator's default configuration.
func DefaultConfig() Config {
	return Config{
		Seed:                1,
		FirstEventRate:      10_000,
		BaseTime:            defaultBaseTimeMil,
		PersonProportion:    1,
		AuctionProportion:   3,
		BidProportion:       46,
		NumActivePeople:     1000,
		NumInFlightAuctions: 100,
		HotAuctionRatio:     2,
		HotSellersRatio:     4,
		HotBiddersRatio:     4,
		AvgPersonByteSize:   200,
		AvgAuctionByteSize:  500,
		AvgBidByteSize:      100,
	}
}

func (c *Config) total() int64 { return c.PersonProportion + c.AuctionProportion + c.BidProportion }

// Timestamp is the event time of event i in milliseconds: the generator's
// clock, FirstEventRate events per second from BaseTime.
func (c Config) Timestamp(i int64) int64 {
	delayUs := 1e6 / float64(c.FirstEventRate)
	return c.BaseTime + int64(float64(i)*delayUs)/1000
}

// KindOf is the kind of event i.
func (c Config) KindOf(i int64) Kind {
	rem := i % c.total()
	switch {
	case rem < c.PersonProportion:
		return PersonKind
	case rem < c.PersonProportion+c.AuctionProportion:
		return AuctionKind
	}
	return BidKind
}

// Event generates event i: a pure function of the configuration and i.
func (c Config) Event(i int64) Event {
	r := newRNG(c.Seed, i)
	ts := c.Timestamp(i)
	switch c.KindOf(i) {
	case PersonKind:
		return Event{Kind: PersonKind, Person: c.person(i, &r, ts)}
	case AuctionKind:
		return Event{Kind: AuctionKind, Auction: c.auction(i, &r, ts)}
	}
	return Event{Kind: BidKind, Bid: c.bid(i, &r, ts)}
}

// All yields events 0 to n−1 in order, generating them one at a time.
func (c Config) All(n int64) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		for i := int64(0); i < n; i++ {
			if !yield(c.Event(i)) {
				return
			}
		}
	}
}

// Generate returns events 0 to n−1.
func Generate(c Config, n int64) []Event {
	out := make([]Event, n)
	for i := range out {
		out[i] = c.Event(int64(i))
	}
	return out
}

// Slice yields the events of a slice.
func Slice(events []Event) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		for _, e := range events {
			if !yield(e) {
				return
			}
		}
	}
}

// lastBase0PersonID is the last valid person ID (from 0) at event id:
// the current one if the event is a person.
func (c *Config) lastBase0PersonID(id int64) int64 {
	epoch, offset := id/c.total(), id%c.total()
	if offset >= c.PersonProportion {
		offset = c.PersonProportion - 1
	}
	return epoch*c.PersonProportion + offset
}

// lastBase0AuctionID is the last valid auction ID (from 0) at event id.
func (c *Config) lastBase0AuctionID(id int64) int64 {
	epoch, offset := id/c.total(), id%c.total()
	switch {
	case offset < c.PersonProportion:
		epoch--
		offset = c.AuctionProportion - 1
	case offset >= c.PersonProportion+c.AuctionProportion:
		offset = c.AuctionProportion - 1
	default:
		offset -= c.PersonProportion
	}
	return epoch*c.AuctionProportion + offset
}

// nextBase0PersonID is a random active person, or one of a few not yet
// created.
func (c *Config) nextBase0PersonID(id int64, r *rng) int64 {
	numPeople := c.lastBase0PersonID(id) + 1
	active := min(numPeople, c.NumActivePeople)
	return numPeople - active + r.int63n(active+personIDLead)
}

// nextBase0AuctionID is a random auction likely still in flight, or one
// of a few not yet created.
func (c *Config) nextBase0AuctionID(id int64, r *rng) int64 {
	maxAuction := c.lastBase0AuctionID(id)
	minAuction := max(maxAuction-c.NumInFlightAuctions, 0)
	return minAuction + r.int63n(maxAuction-minAuction+1+auctionIDLead)
}

var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	fullNames  = func() []string {
		var out []string
		for _, f := range firstNames {
			for _, l := range lastNames {
				out = append(out, f+" "+l)
			}
		}
		return out
	}()
	hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
)

// channelTable holds the hot channels' URLs and the other channels' names
// and URLs, made once from a fixed seed.
var channelTable = sync.OnceValue(func() *channels {
	t := &channels{}
	r := newRNG(0x6e65786d61726b, -1)
	for i := range t.hotURLs {
		t.hotURLs[i] = baseURL(&r)
	}
	for i := range t.names {
		t.names[i] = "channel-" + strconv.Itoa(i)
		u := baseURL(&r)
		if r.intn(10) > 0 {
			u += "&channel_id=" + strconv.Itoa(int(math.Abs(float64(reverse32(int32(i))))))
		}
		t.urls[i] = u
	}
	return t
})

type channels struct {
	hotURLs [4]string
	names   [channelsNumber]string
	urls    [channelsNumber]string
}

func reverse32(v int32) int32 {
	u := uint32(v)
	var out uint32
	for range 32 {
		out = out<<1 | u&1
		u >>= 1
	}
	return int32(out)
}

func baseURL(r *rng) string {
	return "https://www.nexmark.com/" + nextString(r, 5, '_') + "/" + nextString(r, 5, '_') + "/" + nextString(r, 5, '_') + "/item.htm?query=1"
}

func (c *Config) person(id int64, r *rng, ts int64) *Person {
	p := &Person{ID: c.lastBase0PersonID(id) + FirstPersonID, DateTime: ts}
	p.Name = fullNames[r.intn(len(fullNames))]
	p.EmailAddress = nextString(r, 7, ' ') + "@" + nextString(r, 5, ' ') + ".com"
	p.CreditCard = creditCard(r)
	p.City = usCities[r.intn(len(usCities))]
	p.State = usStates[r.intn(len(usStates))]
	size := 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = nextExtra(r, size, c.AvgPersonByteSize)
	return p
}

func creditCard(r *rng) string {
	var b [19]byte
	for i := 0; i < 4; i++ {
		n := r.intn(10000)
		o := i * 5
		if i > 0 {
			b[o-1] = ' '
		}
		b[o], b[o+1], b[o+2], b[o+3] = byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10)
	}
	return string(b[:])
}

func (c *Config) auction(id int64, r *rng, ts int64) *Auction {
	a := &Auction{ID: c.lastBase0AuctionID(id) + FirstAuctionID, DateTime: ts}
	if r.intn(c.HotSellersRatio) > 0 {
		// The first person of the batch of the last hotSellerBatch people.
		a.Seller = c.lastBase0PersonID(id) / hotSellerBatch * hotSellerBatch
	} else {
		a.Seller = c.nextBase0PersonID(id, r)
	}
	a.Seller += FirstPersonID
	a.Category = FirstCategoryID + int64(r.intn(numCategories))
	a.InitialBid = nextPrice(r)
	a.Expires = ts + c.auctionLength(id, r, ts)
	a.ItemName = nextString(r, 20, ' ')
	a.Description = nextString(r, 100, ' ')
	a.Reserve = a.InitialBid + nextPrice(r)
	size := 8 + len(a.ItemName) + len(a.Description) + 8 + 8 + 8 + 8 + 8
	a.Extra = nextExtra(r, size, c.AvgAuctionByteSize)
	return a
}

// auctionLength is a random auction length averaging the time until
// NumInFlightAuctions more auctions are created.
func (c *Config) auctionLength(id int64, r *rng, ts int64) int64 {
	eventsForAuctions := c.NumInFlightAuctions * c.total() / c.AuctionProportion
	horizon := c.Timestamp(id+eventsForAuctions) - ts
	return 1 + r.int63n(max(horizon*2, 1))
}

func (c *Config) bid(id int64, r *rng, ts int64) *Bid {
	b := &Bid{DateTime: ts}
	if r.intn(c.HotAuctionRatio) > 0 {
		// The first auction of the batch of the last hotAuctionBatch auctions.
		b.Auction = c.lastBase0AuctionID(id) / hotAuctionBatch * hotAuctionBatch
	} else {
		b.Auction = c.nextBase0AuctionID(id, r)
	}
	b.Auction += FirstAuctionID
	if r.intn(c.HotBiddersRatio) > 0 {
		// The second person of the batch, so that hot bidders and hot
		// sellers differ.
		b.Bidder = c.lastBase0PersonID(id)/hotBidderBatch*hotBidderBatch + 1
	} else {
		b.Bidder = c.nextBase0PersonID(id, r)
	}
	b.Bidder += FirstPersonID
	b.Price = nextPrice(r)
	t := channelTable()
	if r.intn(hotChannelsRatio) > 0 {
		i := r.intn(len(hotChannels))
		b.Channel, b.URL = hotChannels[i], t.hotURLs[i]
	} else {
		i := r.intn(channelsNumber)
		b.Channel, b.URL = t.names[i], t.urls[i]
	}
	b.Extra = nextExtra(r, 8+8+8+8, c.AvgBidByteSize)
	return b
}

// nextPrice is a price (in cents) spread log-uniformly over 1 to 10^6 dollars.
func nextPrice(r *rng) int64 { return int64(math.Round(math.Pow(10, r.float64()*6) * 100)) }

// nextString is a random string of 3 to maxLength−1 letters, with about
// one in 13 the space character sp, trimmed.
func nextString(r *rng, maxLength int, sp byte) string {
	n := minStringLength + r.intn(maxLength-minStringLength)
	b := make([]byte, n)
	for i := range b {
		if r.intn(13) == 0 {
			b[i] = sp
		} else {
			b[i] = byte('a' + r.intn(26))
		}
	}
	if sp == ' ' {
		return strings.TrimSpace(string(b))
	}
	return string(b)
}

// nextExactString is length random letters.
func nextExactString(r *rng, length int) string {
	var sb strings.Builder
	sb.Grow(length)
	for length > 0 {
		v := r.next()
		for k := 0; k < 13 && length > 0; k++ {
			sb.WriteByte(byte('a' + v%26))
			v /= 26
			length--
		}
	}
	return sb.String()
}

// nextExtra pads an event of currentSize bytes to desiredAverageSize on
// average (±20%).
func nextExtra(r *rng, currentSize, desiredAverageSize int) string {
	if currentSize > desiredAverageSize {
		return ""
	}
	desired := desiredAverageSize - currentSize
	delta := int(math.Round(float64(desired) * 0.2))
	size := desired - delta
	if delta > 0 {
		size += r.intn(2 * delta)
	}
	return nextExactString(r, size)
}

// rng is SplitMix64, seeded from (seed, event number) so that every event
// has its own stream of random numbers.
type rng struct{ s uint64 }

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func newRNG(seed uint64, i int64) rng {
	return rng{s: mix64(seed+0x9e3779b97f4a7c15) ^ mix64(uint64(i)*0x9e3779b97f4a7c15+0x632be59bd9b4e019)}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// intn is uniform in [0, n) for 0 < n < 2^32.
func (r *rng) intn(n int) int { return int((r.next() >> 32) * uint64(n) >> 32) }

// int63n is uniform in [0, n) for n > 0 (with a bias below 2^-40 for
// the n used here).
func (r *rng) int63n(n int64) int64 { return int64(r.next() % uint64(n)) }

// float64 is uniform in [0, 1).
func (r *rng) float64() float64 { return float64(r.next()>>11) / (1 << 53) }
