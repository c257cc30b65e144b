package functions

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/weirproject/weir/internal/sql/types"
)

// Context is what Eval sees of the statement it runs in. One Context is
// used by one goroutine at a time.
type Context struct {
	// Loc is the session time zone ('table.local-time-zone'); nil is UTC.
	Loc *time.Location
	// Now is the statement's (batch) or record's (streaming) current time,
	// read by CURRENT_TIMESTAMP, NOW(), CURRENT_DATE and friends.
	Now time.Time
	// Rand serves RAND() and UUID(); nil uses a process-wide source.
	Rand *rand.Rand
	// Scratch is a buffer functions may use between calls.
	Scratch []byte
}

// Location returns Loc or UTC.
func (c *Context) Location() *time.Location {
	if c == nil || c.Loc == nil {
		return time.UTC
	}
	return c.Loc
}

func (c *Context) now() time.Time {
	if c == nil || c.Now.IsZero() {
		return time.Now()
	}
	return c.Now
}

func (c *Context) rng() *rand.Rand {
	if c != nil && c.Rand != nil {
		return c.Rand
	}
	return globalRand
}

// globalRand serves contexts without a Rand of their own. A rand.Rand is
// not safe for concurrent use, and the parallel subtasks of a job share
// this one, so its source takes a lock.
var globalRand = rand.New(&lockedSource{src: rand.NewPCG(uint64(time.Now().UnixNano()), 0x9e3779b97f4a7c15)})

type lockedSource struct {
	mu  sync.Mutex
	src *rand.PCG
}

func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Uint64()
}

// EvalFunc evaluates a scalar function on argument values. It may
// overwrite the elements of args (the caller's scratch slice).
type EvalFunc func(ctx *Context, args []any) (any, error)

// Scalar is a resolved scalar function or operator: one overload bound to
// argument types, with implicit casts of the arguments built into Eval.
type Scalar struct {
	Name string
	// Args are the argument types it was resolved for.
	Args   []types.DataType
	Result types.DataType
	// Deterministic is false for RAND, UUID, NOW and the like: the planner
	// must not constant-fold them.
	Deterministic bool
	Eval          EvalFunc
}

// Resolver picks an overload for argument types; it returns (nil, nil)
// when none matches, and an error when one matches but is misused.
type Resolver func(args []types.DataType) (*Scalar, error)

type scalarDef struct {
	name       string
	signatures []string
	resolvers  []Resolver
}

// Registry holds scalar and aggregate functions. The built-in registry is
// shared and read-only; NewRegistry returns a copy that user functions can
// be added to (one per Table environment).
type Registry struct {
	mu       sync.RWMutex
	scalars  map[string]*scalarDef
	aggs     map[string]*aggDef
	tables   map[string]*TableFunc
	readOnly bool
}

var (
	builtinOnce sync.Once
	builtin     *Registry
)

// Builtins returns the shared read-only registry of Flink's built-in
// functions and operators.
func Builtins() *Registry {
	builtinOnce.Do(func() {
		builtin = &Registry{scalars: map[string]*scalarDef{}, aggs: map[string]*aggDef{}}
		registerOperators(builtin)
		registerMath(builtin)
		registerStrings(builtin)
		registerTemporal(builtin)
		registerConditional(builtin)
		registerJSON(builtin)
		registerMisc(builtin)
		registerAggregates(builtin)
		builtin.readOnly = true
	})
	return builtin
}

// NewRegistry returns a registry with the built-ins, to which functions can
// be added.
func NewRegistry() *Registry { return Builtins().Clone() }

// Clone returns an independent, writable copy.
func (r *Registry) Clone() *Registry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := &Registry{scalars: make(map[string]*scalarDef, len(r.scalars)), aggs: make(map[string]*aggDef, len(r.aggs))}
	for k, v := range r.scalars {
		d := *v
		d.signatures = append([]string(nil), v.signatures...)
		d.resolvers = append([]Resolver(nil), v.resolvers...)
		c.scalars[k] = &d
	}
	for k, v := range r.aggs {
		d := *v
		d.resolvers = append([]aggResolver(nil), v.resolvers...)
		c.aggs[k] = &d
	}
	for k, v := range r.tables {
		if c.tables == nil {
			c.tables = map[string]*TableFunc{}
		}
		c.tables[k] = v
	}
	return c
}

// Lookup resolves a function in the built-in registry.
func Lookup(name string, args []types.DataType) (*Scalar, error) {
	return Builtins().Lookup(name, args)
}

// Lookup resolves name (case-insensitive) for the argument types, trying
// overloads in registration order (user functions registered later are
// tried first).
func (r *Registry) Lookup(name string, args []types.DataType) (*Scalar, error) {
	key := strings.ToUpper(name)
	r.mu.RLock()
	d := r.scalars[key]
	r.mu.RUnlock()
	if d == nil {
		return nil, fmt.Errorf("No match found for function signature %s: no such function", signature(key, args))
	}
	for i := len(d.resolvers) - 1; i >= 0; i-- {
		s, err := d.resolvers[i](args)
		if err != nil {
			return nil, err
		}
		if s != nil {
			if s.Name == "" {
				s.Name = key
			}
			if s.Args == nil {
				s.Args = append([]types.DataType(nil), args...)
			}
			return s, nil
		}
	}
	msg := fmt.Sprintf("No match found for function signature %s", signature(key, args))
	if len(d.signatures) > 0 {
		msg += "\nSupported signatures are:\n" + strings.Join(d.signatures, "\n")
	}
	return nil, fmt.Errorf("%s", msg)
}

// Has reports whether a scalar function of that name exists.
func (r *Registry) Has(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.scalars[strings.ToUpper(name)] != nil
}

// Names lists the scalar functions and operators.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var ns []string
	for k := range r.scalars {
		ns = append(ns, k)
	}
	sort.Strings(ns)
	return ns
}

func signature(name string, args []types.DataType) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = "<" + a.Nullable().String() + ">"
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// add registers a resolver under one or more names; sig documents it.
// Names are separated by '|'; the operator || itself is written "||".
func (r *Registry) add(names string, sig string, res Resolver) {
	list := strings.Split(names, "|")
	if strings.HasPrefix(names, "||") {
		list = append([]string{"||"}, strings.Split(strings.TrimPrefix(names, "|||"), "|")...)
	}
	for _, n := range list {
		d := r.scalars[n]
		if d == nil {
			d = &scalarDef{name: n}
			r.scalars[n] = d
		}
		if sig != "" {
			d.signatures = append(d.signatures, strings.ReplaceAll(sig, "$", n))
		}
		d.resolvers = append(d.resolvers, res)
	}
}

// ScalarFunc declares a user-defined scalar function.
type ScalarFunc struct {
	// Args are the parameter types; arguments are implicitly cast to them.
	Args []types.DataType
	// Result is the result type. Its nullability is widened when any
	// argument is nullable and NullOnNull is set.
	Result types.DataType
	// NullOnNull makes the function return NULL without calling Eval when
	// any argument is NULL.
	NullOnNull bool
	// NonDeterministic marks functions the planner must not fold.
	NonDeterministic bool
	Eval             EvalFunc
}

// ErrReadOnly is returned when registering into the shared built-ins.
var ErrReadOnly = fmt.Errorf("functions: the built-in registry is read-only; use NewRegistry")

// RegisterScalar adds an overload of a user-defined scalar function.
func (r *Registry) RegisterScalar(name string, f ScalarFunc) error {
	if r.readOnly {
		return ErrReadOnly
	}
	if name == "" || f.Eval == nil {
		return fmt.Errorf("functions: RegisterScalar needs a name and an Eval")
	}
	for _, a := range f.Args {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("functions: %s: %w", name, err)
		}
	}
	key := strings.ToUpper(name)
	params := append([]types.DataType(nil), f.Args...)
	sig := signature(key, params)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(key, sig, func(args []types.DataType) (*Scalar, error) {
		s, _ := fixed(params, f.Result, f.NullOnNull, f.Eval)(args)
		if s != nil {
			s.Deterministic = !f.NonDeterministic
		}
		return s, nil
	})
	return nil
}
