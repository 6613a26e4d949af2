package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Condition limits (Buzz: 4096 bytes, 100 ms).
const (
	MaxConditionBytes = 4096
	conditionTimeout  = 100 * time.Millisecond
	// conditionCostLimit bounds the work one evaluation may do, in CEL cost
	// units (about one per operation and per byte compared): a realistic
	// condition costs tens, and 100 000 units take about 10 ms.
	conditionCostLimit = 100_000
)

// condEnv is the CEL environment of conditions: Buzz's helpers plus the
// standard library. It is immutable once built and shared.
var condEnv = sync.OnceValues(func() (*cel.Env, error) {
	str2 := func(name string, fn func(a, b string) bool) cel.EnvOption {
		return cel.Function(name, cel.Overload(name+"_string_string",
			[]*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(func(a, b ref.Val) ref.Val {
				as, ok1 := a.(types.String)
				bs, ok2 := b.(types.String)
				if !ok1 || !ok2 {
					return types.NewErr("%s: want two strings", name)
				}
				return types.Bool(fn(string(as), string(bs)))
			})))
	}
	return cel.NewEnv(
		str2("str_contains", strings.Contains),
		str2("starts_with", strings.HasPrefix),
		str2("ends_with", strings.HasSuffix),
		cel.Function("len", cel.Overload("len_dyn", []*cel.Type{cel.DynType}, cel.IntType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				switch t := v.(type) {
				case types.String:
					return types.Int(utf8.RuneCountInString(string(t)))
				case types.Bytes:
					return types.Int(len(t))
				case traits.Sizer:
					return t.Size()
				}
				return types.NewErr("len: unsupported type %s", v.Type().TypeName())
			}))),
		cel.ParserExpressionSizeLimit(MaxConditionBytes),
		cel.ParserRecursionLimit(100),
	)
})

// compileCondition parses a condition. Identifiers are resolved when the
// condition is evaluated (the variables of a webhook trigger or of a step
// output are only known then), so a reference to a variable that is not
// set is an evaluation error, not a parse error.
func compileCondition(src string) (cel.Program, error) {
	if len(src) > MaxConditionBytes {
		return nil, fmt.Errorf("condition is longer than %d bytes", MaxConditionBytes)
	}
	env, err := condEnv()
	if err != nil {
		return nil, fmt.Errorf("condition environment: %w", err)
	}
	ast, iss := env.Parse(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("not a valid condition: %s", strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	prg, err := env.Program(ast,
		cel.CostLimit(conditionCostLimit),
		cel.InterruptCheckFrequency(64),
	)
	if err != nil {
		return nil, fmt.Errorf("not a valid condition: %w", err)
	}
	return prg, nil
}

// errConditionType: a condition evaluated to something other than a bool.
var errConditionType = errors.New("condition did not evaluate to true or false")

// evalCondition evaluates prg with vars, bounded by conditionTimeout and
// the cost limit.
func evalCondition(ctx context.Context, prg cel.Program, vars map[string]any) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, conditionTimeout)
	defer cancel()
	out, _, err := prg.ContextEval(ctx, vars)
	if err != nil {
		return false, fmt.Errorf("condition: %w", err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, errConditionType
	}
	return bool(b), nil
}

// conditionCache holds compiled conditions by source text (CEL programs
// are safe for concurrent use). It is bounded: when full it starts over.
type conditionCache struct {
	mu sync.Mutex
	m  map[string]cel.Program
}

const maxCachedConditions = 4096

func (c *conditionCache) get(src string) (cel.Program, error) {
	c.mu.Lock()
	p, ok := c.m[src]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := compileCondition(src)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedConditions {
		c.m = make(map[string]cel.Program)
	}
	c.m[src] = p
	c.mu.Unlock()
	return p, nil
}
