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
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
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

// condProgram is a compiled condition.
type condProgram struct {
	prg cel.Program
	// linear: no comprehension and only operators and functions whose
	// cost is linear in their input and whose result is small (no string
	// concatenation), so the whole evaluation is bounded by the
	// expression's size times the input's: it runs without cost tracking
	// or deadline, which makes it about ten times cheaper. Anything else
	// is cost-limited and deadline-bound.
	linear bool
}

// linearFuncs are the calls a linear condition may make.
var linearFuncs = map[string]bool{
	operators.LogicalAnd: true, operators.LogicalOr: true, operators.LogicalNot: true,
	operators.Equals: true, operators.NotEquals: true, operators.Less: true, operators.LessEquals: true,
	operators.Greater: true, operators.GreaterEquals: true, operators.Conditional: true,
	operators.Negate: true, operators.In: true, operators.OldIn: true, operators.Index: true,
	"str_contains": true, "starts_with": true, "ends_with": true, "len": true, "size": true,
	"contains": true, "startsWith": true, "endsWith": true,
}

// compileCondition parses a condition. Identifiers are resolved when the
// condition is evaluated (the variables of a webhook trigger or of a step
// output are only known then), so a reference to a variable that is not
// set is an evaluation error, not a parse error.
func compileCondition(src string) (*condProgram, error) {
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
	linear := true
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.ComprehensionKind:
			linear = false
		case celast.CallKind:
			if !linearFuncs[e.AsCall().FunctionName()] {
				linear = false
			}
		}
	}))
	var opts []cel.ProgramOption
	if !linear {
		opts = append(opts, cel.CostLimit(conditionCostLimit), cel.InterruptCheckFrequency(64))
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		return nil, fmt.Errorf("not a valid condition: %w", err)
	}
	return &condProgram{prg: prg, linear: linear}, nil
}

// errConditionType: a condition evaluated to something other than a bool.
var errConditionType = errors.New("condition did not evaluate to true or false")

// evalCondition evaluates p with vars (a map or a prepared
// interpreter.Activation), bounded by conditionTimeout and the cost limit.
func evalCondition(ctx context.Context, p *condProgram, vars any) (bool, error) {
	if p.linear {
		return evalConditionIn(ctx, p, vars)
	}
	ctx, cancel := context.WithTimeout(ctx, conditionTimeout)
	defer cancel()
	return evalConditionIn(ctx, p, vars)
}

// evalConditionIn evaluates p; a condition that is not linear runs under
// ctx's deadline (which the caller sets; several conditions may share it)
// and the cost limit.
func evalConditionIn(ctx context.Context, p *condProgram, vars any) (bool, error) {
	var (
		out ref.Val
		err error
	)
	if p.linear {
		out, _, err = p.prg.Eval(vars)
	} else {
		out, _, err = p.prg.ContextEval(ctx, vars)
	}
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
	m  map[string]*condProgram
}

const maxCachedConditions = 4096

func (c *conditionCache) get(src string) (*condProgram, error) {
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
		c.m = make(map[string]*condProgram)
	}
	c.m[src] = p
	c.mu.Unlock()
	return p, nil
}
