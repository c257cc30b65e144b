package parser

import "testing"

func TestParseType(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"BOOLEAN", "BOOLEAN"},
		{"tinyint", "TINYINT"},
		{"SMALLINT", "SMALLINT"},
		{"INT", "INT"},
		{"INTEGER", "INT"},
		{"BIGINT NOT NULL", "BIGINT!"},
		{"BIGINT NULL", "BIGINT"},
		{"FLOAT", "FLOAT"},
		{"REAL", "REAL"},
		{"DOUBLE", "DOUBLE"},
		{"DOUBLE PRECISION", "DOUBLE"},
		{"DECIMAL", "DECIMAL"},
		{"DECIMAL(10)", "DECIMAL(10)"},
		{"DECIMAL(23, 3)", "DECIMAL(23,3)"},
		{"DEC(5,2)", "DECIMAL(5,2)"},
		{"NUMERIC(38, 18)", "DECIMAL(38,18)"},
		{"CHAR", "CHAR"},
		{"CHAR(3)", "CHAR(3)"},
		{"CHARACTER(3)", "CHAR(3)"},
		{"CHARACTER VARYING(10)", "VARCHAR(10)"},
		{"VARCHAR", "VARCHAR"},
		{"VARCHAR(255)", "VARCHAR(255)"},
		{"STRING", "STRING"},
		{"BINARY(16)", "BINARY(16)"},
		{"BINARY VARYING(16)", "VARBINARY(16)"},
		{"VARBINARY", "VARBINARY"},
		{"BYTES", "BYTES"},
		{"DATE", "DATE"},
		{"TIME", "TIME"},
		{"TIME(3)", "TIME(3)"},
		{"TIME(0) WITHOUT TIME ZONE", "TIME(0)"},
		{"TIMESTAMP", "TIMESTAMP"},
		{"TIMESTAMP(3)", "TIMESTAMP(3)"},
		{"TIMESTAMP(9) WITHOUT TIME ZONE", "TIMESTAMP(9)"},
		{"TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3)"},
		{"TIMESTAMP WITH LOCAL TIME ZONE NOT NULL", "TIMESTAMP_LTZ!"},
		{"TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(3)"},
		{"INTERVAL DAY", "INTERVAL DAY"},
		{"INTERVAL DAY(2) TO SECOND(3)", "INTERVAL DAY(2) TO SECOND frac=3"},
		{"INTERVAL DAY TO SECOND(3)", "INTERVAL DAY TO SECOND frac=3"},
		{"INTERVAL YEAR TO MONTH", "INTERVAL YEAR TO MONTH"},
		{"INTERVAL YEAR(4)", "INTERVAL YEAR(4)"},
		{"INTERVAL HOUR TO MINUTE", "INTERVAL HOUR TO MINUTE"},
		{"INTERVAL SECOND(3)", "INTERVAL SECOND(3)"},
		{"ARRAY<INT>", "ARRAY<INT>"},
		{"ARRAY<INT NOT NULL> NOT NULL", "ARRAY<INT!>!"},
		{"INT ARRAY", "ARRAY<INT>"},
		{"INT NOT NULL ARRAY NOT NULL", "ARRAY<INT!>!"},
		{"VARCHAR MULTISET", "MULTISET<VARCHAR>"},
		{"MULTISET<STRING>", "MULTISET<STRING>"},
		{"MAP<STRING, ARRAY<BIGINT>>", "MAP<STRING,ARRAY<BIGINT>>"},
		{"ROW<a INT, b STRING>", "ROW<a INT,b STRING>"},
		{"ROW(a INT, `b c` STRING 'the b')", "ROW<a INT,b c STRING 'the b'>"},
		{"ROW<>", "ROW<>"},
		{"ROW<id BIGINT, `dateTime` TIMESTAMP(3), nested ROW<x INT NOT NULL>>", "ROW<id BIGINT,dateTime TIMESTAMP(3),nested ROW<x INT!>>"},
		{"RAW('java.lang.Object', 'AAA=')", "RAW(java.lang.Object,AAA=)"},
	}
	for _, tc := range tests {
		ty, err := ParseType(tc.in)
		if err != nil {
			t.Errorf("ParseType(%q): %v", tc.in, err)
			continue
		}
		if got := sxType(ty); got != tc.want {
			t.Errorf("ParseType(%q) = %s, want %s", tc.in, got, tc.want)
		}
		checkRoundTrip(t, ty)
	}
}

func TestParseTypeErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"TIMESTAMP WITH TIME ZONE", "line 1, column 11: TIMESTAMP WITH TIME ZONE is not supported; use TIMESTAMP WITH LOCAL TIME ZONE or TIMESTAMP_LTZ"},
		{"DECIMAL(10, 2, 1)", "line 1, column 14: expected ')' but found ','"},
		{"ARRAY<INT", "line 1, column 10: expected '>' but found end of input"},
		{"MAP<INT>", "line 1, column 8: expected ',' but found '>'"},
		{"INTERVAL DAY TO YEAR", "line 1, column 10: invalid interval qualifier DAY TO YEAR"},
		{"VARCHAR(x)", "line 1, column 9: expected an integer but found 'x'"},
		{"INT NOT", "line 1, column 5: expected end of input but found 'NOT'"},
	}
	for _, tc := range tests {
		_, err := ParseType(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseType(%q) error %v, want %s", tc.in, err, tc.want)
		}
	}
}
