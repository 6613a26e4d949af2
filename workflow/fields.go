package workflow

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Fields are the fields of a mapping in a definition (a step's action
// fields, the trigger), as JSON values. The accessors return *FieldError
// naming the field.
type Fields map[string]any

// Only fails on the first key (in sorted order) not in allowed.
func (f Fields) Only(allowed ...string) error {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return fieldErr(k, "unknown field")
		}
	}
	return nil
}

// String returns a string field; absent is "" (or an error when required).
func (f Fields) String(name string, required bool) (string, error) {
	v, ok := f[name]
	if !ok || v == nil {
		if required {
			return "", fieldErr(name, "is required")
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fieldErr(name, "must be a string")
	}
	if required && s == "" {
		return "", fieldErr(name, "must not be empty")
	}
	return s, nil
}

// Bool returns a boolean field; absent is false.
func (f Fields) Bool(name string) (bool, error) {
	v, ok := f[name]
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fieldErr(name, "must be true or false")
	}
	return b, nil
}

// Int returns an integer field; absent is 0.
func (f Fields) Int(name string) (int64, error) {
	v, ok := f[name]
	if !ok || v == nil {
		return 0, nil
	}
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, fieldErr(name, "must be an integer")
		}
		return int64(n), nil
	case int:
		return int64(n), nil
	case int64:
		return n, nil
	}
	return 0, fieldErr(name, "must be an integer")
}

// Strings returns a list-of-strings field; absent is nil.
func (f Fields) Strings(name string) ([]string, error) {
	v, ok := f[name]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fieldErr(name, "must be a list of strings")
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fieldErr(fmt.Sprintf("%s[%d]", name, i), "must be a string")
		}
		out[i] = s
	}
	return out, nil
}

// Map returns a mapping field; absent is nil (or an error when required).
func (f Fields) Map(name string, required bool) (Fields, error) {
	v, ok := f[name]
	if !ok || v == nil {
		if required {
			return nil, fieldErr(name, "is required")
		}
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fieldErr(name, "must be a mapping")
	}
	return Fields(m), nil
}
