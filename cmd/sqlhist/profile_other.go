//go:build !linux

package main

func startProfile() func() { return func() {} }
