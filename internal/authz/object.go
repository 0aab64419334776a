package authz

import (
	"errors"
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// The rules' caller, mcp and request are CEL object types of this
// package's own (not cel-go's reflection over Go structs): each field is
// turned into a CEL value once per decision, and every rule that reads it
// after that reads it as it is, which keeps ten rules within a couple of
// microseconds.

// objectType is one of the declared object types: its fields, in order,
// with their CEL types.
type objectType struct {
	typ    *types.Type
	names  []string
	fields map[string]*types.FieldType
}

func newObjectType(name string, fields []string, fieldTypes []*types.Type) *objectType {
	o := &objectType{typ: types.NewObjectType(name), names: fields, fields: map[string]*types.FieldType{}}
	for i, f := range fields {
		o.fields[f] = &types.FieldType{
			Type:    fieldTypes[i],
			IsSet:   func(any) bool { return true },
			GetFrom: func(v any) (any, error) { return v.(*object).vals[i], nil },
		}
	}
	return o
}

var (
	callerType  = newObjectType("authz.Caller", []string{"subject", "issuer", "scopes"}, []*types.Type{types.StringType, types.StringType, types.NewListType(types.StringType)})
	mcpType     = newObjectType("authz.MCP", []string{"method", "tool", "prompt", "resource", "service", "era"}, []*types.Type{types.StringType, types.StringType, types.StringType, types.StringType, types.StringType, types.StringType})
	requestType = newObjectType("authz.Request", []string{"host", "path", "address"}, []*types.Type{types.StringType, types.StringType, types.StringType})
)

// object is a value of an objectType: its fields as CEL values.
type object struct {
	t    *objectType
	vals []ref.Val
}

var errNoConversion = errors.New("an authorization input does not convert")

// ConvertToNative is refused: rules read fields, they do not convert.
func (o *object) ConvertToNative(reflect.Type) (any, error) { return nil, errNoConversion }

// ConvertToType converts to the type type only.
func (o *object) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return o.t.typ
	}
	return types.NewErr("type conversion error from '%s' to '%s'", o.t.typ, t)
}

// Equal is identity: two inputs are never compared by rules.
func (o *object) Equal(other ref.Val) ref.Val { return types.Bool(o == other) }

// Type is the object's type.
func (o *object) Type() ref.Type { return o.t.typ }

// Value is the object itself, which the field getters read.
func (o *object) Value() any { return o }

// provider declares the object types over cel-go's own registry.
type provider struct {
	types.Provider
	objects map[string]*objectType
}

func newProvider() (*provider, error) {
	base, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	p := &provider{Provider: base, objects: map[string]*objectType{}}
	for _, o := range []*objectType{callerType, mcpType, requestType} {
		p.objects[o.typ.TypeName()] = o
	}
	return p, nil
}

// FindStructType finds a declared object type, or one of the registry's.
func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if o, ok := p.objects[name]; ok {
		return types.NewTypeTypeWithParam(o.typ), true
	}
	return p.Provider.FindStructType(name)
}

// FindStructFieldNames names a declared object type's fields.
func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	if o, ok := p.objects[name]; ok {
		return o.names, true
	}
	return p.Provider.FindStructFieldNames(name)
}

// FindStructFieldType finds a field of a declared object type: a field
// it does not have fails the rule's compilation.
func (p *provider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if o, ok := p.objects[name]; ok {
		f, ok := o.fields[field]
		return f, ok
	}
	return p.Provider.FindStructFieldType(name, field)
}

// values of the input's objects.
func (c *Caller) object(a types.Adapter) *object {
	return &object{t: callerType, vals: []ref.Val{types.String(c.Subject), types.String(c.Issuer), types.NewStringList(a, c.Scopes)}}
}

func (m *MCP) object() *object {
	return &object{t: mcpType, vals: []ref.Val{types.String(m.Method), types.String(m.Tool), types.String(m.Prompt),
		types.String(m.Resource), types.String(m.Service), types.String(m.Era)}}
}

func (r *Request) object() *object {
	return &object{t: requestType, vals: []ref.Val{types.String(r.Host), types.String(r.Path), types.String(r.Address)}}
}
