package catalog

import (
	"encoding/json"
	"fmt"

	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
)

// DataTypeOf turns a type as written into a logical type, with Flink
// SQL's defaults for omitted parameters (DECIMAL is DECIMAL(10, 0), CHAR
// is CHAR(1), VARCHAR and VARBINARY have the maximum length, as
// FlinkTypeSystem's default precision makes them in DDL and CAST,
// TIMESTAMP is TIMESTAMP(6), TIME is TIME(0)).
func DataTypeOf(tn *parser.TypeName) (types.DataType, error) {
	t, err := dataTypeOf(tn)
	if err != nil {
		return types.DataType{}, fmt.Errorf("line %d, column %d: %w", tn.Pos().Line, tn.Pos().Column, err)
	}
	if tn.NotNull {
		t = t.NotNull()
	}
	if err := t.Validate(); err != nil {
		return types.DataType{}, fmt.Errorf("line %d, column %d: %w", tn.Pos().Line, tn.Pos().Column, err)
	}
	return t, nil
}

func dataTypeOf(tn *parser.TypeName) (types.DataType, error) {
	p := func(i, def int) int {
		if i < len(tn.Params) {
			return tn.Params[i]
		}
		return def
	}
	switch tn.Name {
	case "BOOLEAN":
		return types.Boolean(), nil
	case "TINYINT":
		return types.TinyInt(), nil
	case "SMALLINT":
		return types.SmallInt(), nil
	case "INT":
		return types.Int(), nil
	case "BIGINT":
		return types.BigInt(), nil
	case "FLOAT", "REAL":
		return types.Float(), nil
	case "DOUBLE":
		return types.Double(), nil
	case "DECIMAL":
		return types.DecimalType(p(0, 10), p(1, 0)), nil
	case "CHAR":
		return types.Char(p(0, 1)), nil
	case "VARCHAR":
		return types.VarChar(p(0, types.MaxLength)), nil
	case "STRING":
		return types.String(), nil
	case "BINARY":
		return types.Binary(p(0, 1)), nil
	case "VARBINARY":
		return types.VarBinary(p(0, types.MaxLength)), nil
	case "BYTES":
		return types.Bytes(), nil
	case "DATE":
		return types.DateType(), nil
	case "TIME":
		return types.TimeType(p(0, 0)), nil
	case "TIMESTAMP":
		return types.TimestampType(p(0, 6)), nil
	case "TIMESTAMP_LTZ":
		return types.TimestampLTZType(p(0, 6)), nil
	case "ARRAY", "MULTISET":
		if tn.Elem == nil {
			return types.DataType{}, fmt.Errorf("%s needs an element type", tn.Name)
		}
		e, err := DataTypeOf(tn.Elem)
		if err != nil {
			return types.DataType{}, err
		}
		if tn.Name == "ARRAY" {
			return types.Array(e), nil
		}
		return types.Multiset(e), nil
	case "MAP":
		if tn.Key == nil || tn.Value == nil {
			return types.DataType{}, fmt.Errorf("MAP needs a key and a value type")
		}
		k, err := DataTypeOf(tn.Key)
		if err != nil {
			return types.DataType{}, err
		}
		v, err := DataTypeOf(tn.Value)
		if err != nil {
			return types.DataType{}, err
		}
		return types.MapType(k, v), nil
	case "ROW":
		fields := make([]types.Field, len(tn.Fields))
		for i, f := range tn.Fields {
			ft, err := DataTypeOf(f.Type)
			if err != nil {
				return types.DataType{}, err
			}
			fields[i] = types.F(f.Name, ft)
		}
		return types.RowType(fields...), nil
	case "INTERVAL":
		q := tn.Interval
		if q == nil {
			return types.DataType{}, fmt.Errorf("INTERVAL needs its fields, such as DAY TO SECOND")
		}
		return IntervalType(*q)
	}
	return types.DataType{}, fmt.Errorf("type %s is not supported", tn.Name)
}

// IntervalType is the type of an interval qualifier: YEAR TO MONTH
// kinds are year-month intervals, the others day-time.
func IntervalType(q parser.IntervalQualifier) (types.DataType, error) {
	res, ok := intervalRes[string(q.Start)+"|"+string(q.End)]
	if !ok {
		return types.DataType{}, fmt.Errorf("INTERVAL %s TO %s is not a valid interval type", q.Start, q.End)
	}
	lead := q.Precision
	if lead == 0 {
		lead = 2
	}
	frac := q.FracPrecision
	if frac < 0 {
		frac = 6
	}
	return types.Interval(res, lead, frac), nil
}

var intervalRes = map[string]types.IntervalRes{
	"YEAR|": types.ResYear, "YEAR|MONTH": types.ResYearToMonth, "MONTH|": types.ResMonth,
	"DAY|": types.ResDay, "DAY|HOUR": types.ResDayToHour, "DAY|MINUTE": types.ResDayToMinute,
	"DAY|SECOND": types.ResDayToSecond, "HOUR|": types.ResHour, "HOUR|MINUTE": types.ResHourToMinute,
	"HOUR|SECOND": types.ResHourToSecond, "MINUTE|": types.ResMinute, "MINUTE|SECOND": types.ResMinuteToSecond,
	"SECOND|": types.ResSecond,
}

// MarshalJSON stores a column's type as SQL text.
func (c Column) MarshalJSON() ([]byte, error) {
	type plain Column
	return json.Marshal(struct {
		plain
		Type string
	}{plain(c), c.Type.String()})
}

// UnmarshalJSON reads a column stored by MarshalJSON.
func (c *Column) UnmarshalJSON(b []byte) error {
	type plain Column
	var v struct {
		plain
		Type string
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	t, err := types.ParseDataType(v.Type)
	if err != nil {
		return fmt.Errorf("column %s: %w", v.Name, err)
	}
	*c = Column(v.plain)
	c.Type = t
	return nil
}
