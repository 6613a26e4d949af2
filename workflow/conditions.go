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
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// Condition limits (Buzz: 4096 bytes, 100 ms).
const (
	MaxConditionBytes = 4096
	conditionTimeout  = 100 * time.Millisecond
	// MaxConditionCost bounds the work one evaluation of a condition may
	// do, in cost units: one per operation, plus one per ten bytes every
	// function and operator reads or writes (its string and bytes
	// arguments and result; lists and maps by their element count). A
	// realistic condition on a short message costs tens of units; 100 000
	// units are a few milliseconds. An evaluation over the limit fails.
	MaxConditionCost = 100_000
	// MaxTriggerCost bounds the condition cost units spent matching one
	// event against all the workflows of its channel: once spent, the
	// remaining workflows are not evaluated for that event (logged and
	// counted in TriggerStats). Matching happens before the event's OK,
	// so this bounds what a channel's workflows can delay it by: at most
	// MaxTriggerCost plus one MaxConditionCost.
	MaxTriggerCost = 400_000
	// conditionBytesPerUnit: the bytes a function touches per cost unit
	// (CEL's own string traversal factor, 0.1 per byte).
	conditionBytesPerUnit = 10
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

// condProgram is a compiled condition. Every evaluation is cost-tracked
// (conditionCost charges every call by the bytes it touches) and limited
// to MaxConditionCost; comprehensions also stop at the context's deadline.
type condProgram struct {
	prg cel.Program
}

// conditionCost is the runtime cost of every function and operator call
// of a condition: one unit, plus one per conditionBytesPerUnit bytes of its
// string and bytes arguments and result (lists and maps count their
// elements). A list membership test compares the value with every element.
// Regular expressions keep CEL's own (string length × pattern length)
// charge.
type conditionCost struct{}

func (conditionCost) CallCost(_, overload string, args []ref.Val, result ref.Val) *uint64 {
	switch overload {
	case overloads.Matches, overloads.MatchesString:
		return nil
	}
	var n uint64
	if overload == overloads.InList && len(args) == 2 {
		n = valueSize(args[1]) * (1 + valueSize(args[0]))
	} else {
		for _, a := range args {
			n += valueSize(a)
		}
		n += valueSize(result)
	}
	c := 1 + (n+conditionBytesPerUnit-1)/conditionBytesPerUnit
	return &c
}

// valueSize is the bytes of a string or bytes value, the elements of a
// list or map, and 0 for anything else (computed in constant time).
func valueSize(v ref.Val) uint64 {
	switch t := v.(type) {
	case types.String:
		return uint64(len(t))
	case types.Bytes:
		return uint64(len(t))
	case traits.Sizer:
		if n, ok := t.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 0
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
	// What the cost units cannot see is refused: building a map, and
	// indexing with a computed key, hash a key of any length for a
	// constant charge.
	var refusal error
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if refusal != nil {
			return
		}
		switch e.Kind() {
		case celast.MapKind, celast.StructKind:
			refusal = errors.New("not a valid condition: a condition may not build maps or messages")
		case celast.CallKind:
			c := e.AsCall()
			if fn := c.FunctionName(); (fn == operators.Index || fn == operators.OptIndex) &&
				len(c.Args()) == 2 && c.Args()[1].Kind() != celast.LiteralKind {
				refusal = errors.New("not a valid condition: an index must be a literal (write a.b or a[\"b\"])")
			}
		}
	}))
	if refusal != nil {
		return nil, refusal
	}
	prg, err := env.Program(ast, cel.CostTracking(conditionCost{}), cel.CostLimit(MaxConditionCost),
		cel.InterruptCheckFrequency(64))
	if err != nil {
		return nil, fmt.Errorf("not a valid condition: %w", err)
	}
	return &condProgram{prg: prg}, nil
}

// errConditionType: a condition evaluated to something other than a bool.
var errConditionType = errors.New("condition did not evaluate to true or false")

// evalCondition evaluates p with vars (a map or a prepared
// interpreter.Activation), bounded by conditionTimeout and MaxConditionCost.
func evalCondition(ctx context.Context, p *condProgram, vars any) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, conditionTimeout)
	defer cancel()
	ok, _, err := evalConditionIn(ctx, p, vars)
	return ok, err
}

// evalConditionIn evaluates p under ctx's deadline (which the caller sets;
// several conditions may share it) and MaxConditionCost, and returns the
// cost units it spent (MaxConditionCost when it was stopped by the limit).
func evalConditionIn(ctx context.Context, p *condProgram, vars any) (bool, uint64, error) {
	out, det, err := p.prg.ContextEval(ctx, vars)
	var cost uint64 = MaxConditionCost
	if det != nil {
		if c := det.ActualCost(); c != nil {
			cost = min(*c, MaxConditionCost)
		}
	}
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) {
			cost = MaxConditionCost
		}
		return false, cost, fmt.Errorf("condition: %w", err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, cost, errConditionType
	}
	return bool(b), cost, nil
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
