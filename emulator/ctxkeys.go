package emulator

import "context"

type bodyFaultKey struct{}

func withBodyFault(ctx context.Context, f *Fault) context.Context {
	return context.WithValue(ctx, bodyFaultKey{}, f)
}

func bodyFault(ctx context.Context) *Fault {
	f, _ := ctx.Value(bodyFaultKey{}).(*Fault)
	return f
}
