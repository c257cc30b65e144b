package functions_test

import (
	"fmt"
	"time"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
)

func Example() {
	// Resolve once at planning time: a + b with a INT NOT NULL, b DECIMAL(10, 2).
	plus, err := functions.Lookup("+", []types.DataType{types.Int().NotNull(), types.DecimalType(10, 2)})
	if err != nil {
		panic(err)
	}
	fmt.Println(plus.Result) // INT widens to DECIMAL(10, 0); nullable as b is

	// Evaluate per record; args is a scratch slice the caller reuses.
	ctx := &functions.Context{Loc: time.UTC, Now: time.Now()}
	args := []any{int32(1), types.MakeDecimal(250, 2)}
	v, _ := plus.Eval(ctx, args)
	fmt.Println(types.Format(v, plus.Result))

	// Aggregates: one accumulator per group, kept in keyed state as bytes.
	avg, _ := functions.LookupAggregate("AVG", []types.DataType{types.DecimalType(10, 2)}, false)
	acc := avg.New(true) // with retraction, for an updating input
	_ = acc.Add([]any{types.MakeDecimal(100, 2)})
	_ = acc.Add([]any{types.MakeDecimal(200, 2)})
	_ = acc.Retract([]any{types.MakeDecimal(100, 2)})
	state := acc.AppendState(nil)
	restored := avg.New(true)
	_ = restored.DecodeState(state)
	r, _ := restored.Result()
	fmt.Println(avg.Result, types.Format(r, avg.Result))

	// User functions live in a registry copy, never in the shared built-ins.
	reg := functions.NewRegistry()
	_ = reg.RegisterFunc("PLUS_ONE", func(x int64) int64 { return x + 1 })
	f, _ := reg.Lookup("plus_one", []types.DataType{types.Int()})
	v, _ = f.Eval(ctx, []any{int32(41)})
	fmt.Println(f.Result, v)
	// Output:
	// DECIMAL(13, 2)
	// 3.50
	// DECIMAL(38, 6) 2.000000
	// BIGINT 42
}
