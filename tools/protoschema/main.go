// Command protoschema writes the protobuf schema of the built-in Kubernetes types that
// client_cache.protobuf decodes: for every struct reached from the types client-go's
// scheme knows, each field's protobuf number, its JSON name and options, and its Go shape.
// It reads the facts from the struct tags and types of k8s.io/api (the version in go.mod)
// by reflection, and refuses a type whose JSON form it does not know (a custom
// MarshalJSON not in the list of special types).
//
//	go run . > ../../client_cache/codec/protobuf_schema.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes/scheme"
)

// special: types whose protobuf and JSON forms client_cache converts by hand.
var special = map[string]string{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":       "time",
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":  "microtime",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":   "duration",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString": "intorstring",
	"k8s.io/apimachinery/pkg/api/resource.Quantity":   "quantity",
	"k8s.io/apimachinery/pkg/runtime.RawExtension":    "rawjson",
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":   "rawjson",
	"k8s.io/apimachinery/pkg/runtime.Unknown":         "unknown",
}

var jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

type field struct {
	Number    int    `json:"n"`
	Name      string `json:"name"`
	OmitEmpty bool   `json:"omitempty,omitempty"`
	OmitZero  bool   `json:"omitzero,omitempty"`
	Inline    bool   `json:"inline,omitempty"`
	Shape     any    `json:"shape"`
}

type schema struct {
	KubernetesAPI string             `json:"k8s.io/api"`
	Kinds         map[string]string  `json:"kinds"`
	Types         map[string][]field `json:"types"`
}

func typeName(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

type walker struct {
	out     schema
	pending []reflect.Type
}

// shape describes a Go type as the decoder needs it: a scalar kind, a named struct or
// special type, a list of one, a map, or a pointer to one ("?" prefix).
func (w *walker) shape(t reflect.Type) any {
	if t.Kind() == reflect.Pointer {
		return map[string]any{"ptr": w.shape(t.Elem())}
	}
	if t.Name() != "" && t.PkgPath() != "" {
		if s, ok := special[typeName(t)]; ok {
			return s
		}
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int32, reflect.Int, reflect.Int64, reflect.Int16, reflect.Int8:
		return "int" + strconv.Itoa(t.Bits())
	case reflect.Uint32, reflect.Uint64, reflect.Uint16, reflect.Uint8, reflect.Uint:
		return "uint" + strconv.Itoa(t.Bits())
	case reflect.Float64:
		return "float64"
	case reflect.Float32:
		return "float32"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return map[string]any{"list": w.shape(t.Elem())}
	case reflect.Map:
		value := w.shape(t.Elem())
		if e := t.Elem(); e.Kind() == reflect.Slice && e.Name() != "" && e.Elem().Kind() != reflect.Uint8 {
			// a named list as a map value is a message with the list as its field 1
			value = map[string]any{"items": value}
		}
		return map[string]any{"map": value, "key": w.shape(t.Key())}
	case reflect.Struct:
		if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
			panic(fmt.Sprintf("%s has its own JSON form and is not a special type", typeName(t)))
		}
		name := typeName(t)
		if _, seen := w.out.Types[name]; !seen {
			w.out.Types[name] = nil
			w.pending = append(w.pending, t)
		}
		return name
	}
	panic(fmt.Sprintf("unsupported Go type %s", t))
}

func (w *walker) fields(t reflect.Type) []field {
	out := []field{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("protobuf")
		jsonTag := f.Tag.Get("json")
		if tag == "" || tag == "-" {
			if strings.HasPrefix(jsonTag, ",inline") || jsonTag == "-" || !f.IsExported() {
				continue // TypeMeta: the envelope carries it
			}
			panic(fmt.Sprintf("%s.%s has no protobuf tag", typeName(t), f.Name))
		}
		parts := strings.Split(tag, ",")
		number, err := strconv.Atoi(parts[1])
		if err != nil {
			panic(err)
		}
		opts := strings.Split(jsonTag, ",")
		fd := field{Number: number, Name: opts[0], Shape: w.shape(f.Type)}
		for _, o := range opts[1:] {
			switch o {
			case "omitempty":
				fd.OmitEmpty = true
			case "omitzero":
				fd.OmitZero = true
			case "inline": // a struct whose fields JSON puts in the parent's
				fd.Inline = true
			}
		}
		if fd.Inline {
			if _, ok := fd.Shape.(string); !ok || f.Type.Kind() != reflect.Struct {
				panic(fmt.Sprintf("%s.%s is inline but not a struct", typeName(t), f.Name))
			}
		} else if fd.Name == "" {
			panic(fmt.Sprintf("%s.%s has no JSON name", typeName(t), f.Name))
		}
		out = append(out, fd)
	}
	return out
}

func main() {
	w := &walker{out: schema{Kinds: map[string]string{}, Types: map[string][]field{}}}
	for gvk, t := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == "__internal" || t.Kind() != reflect.Struct {
			continue
		}
		key := gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
		w.out.Kinds[strings.TrimPrefix(key, "/")] = w.shape(t).(string)
	}
	for len(w.pending) > 0 {
		t := w.pending[0]
		w.pending = w.pending[1:]
		w.out.Types[typeName(t)] = w.fields(t)
	}
	w.out.KubernetesAPI = apiVersion()
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(w.out); err != nil {
		panic(err)
	}
}

// apiVersion is the k8s.io/api version this program was built with.
func apiVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/api" {
				return dep.Version
			}
		}
	}
	return "unknown"
}
