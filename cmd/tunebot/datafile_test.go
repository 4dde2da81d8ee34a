package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"tunebot/config"
)

// Every command that opens a damaged data file says so in one line and exits 1: no panic,
// no stack trace. The doctor reports it as a failed check.
func TestDamagedDataFileIsOneLine(t *testing.T) {
	damages := map[string]func(t *testing.T, path string){
		"truncated": func(t *testing.T, path string) {
			if err := os.Truncate(path, 3*4096); err != nil {
				t.Fatal(err)
			}
		},
		"garbled pages": func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			junk := bytes.Repeat([]byte{0xA5, 0x13, 0x7F, 0x00, 0xFF}, 4096)
			if _, err := f.WriteAt(junk[:5*4096], 2*4096); err != nil { // every page after the two metas
				t.Fatal(err)
			}
		},
	}
	commands := map[string][]string{
		"preset list": {"preset", "list"},
		"run":         {"run"},
		"tune":        {"tune", "--fallback"},
		"backup":      {"backup", "COPY"},
		"doctor":      {"doctor"},
	}
	for dname, damage := range damages {
		for cname, args := range commands {
			t.Run(dname+"/"+cname, func(t *testing.T) {
				dir := t.TempDir()
				data := filepath.Join(dir, "data")
				storeWithSessions(t, data, 30)
				path := filepath.Join(data, "tunebot.db")
				damage(t, path)
				cfg := writeConfig(t, dir, "data_dir: "+data+"\nservice: {addr: \"off\"}\nsession: {fallback: true}\n")
				argv := append([]string{}, args...)
				for i, a := range argv {
					if a == "COPY" {
						argv[i] = filepath.Join(dir, "copy.db")
					}
				}
				cmd := exec.Command(tunebotBin, append(argv, "--config", cfg)...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				code := cmd.ProcessState.ExitCode()
				all := stdout.String() + stderr.String()
				want := "data file " + path + " is damaged: restore a backup or move it aside"
				if code != 1 || strings.Contains(all, "goroutine") || strings.Contains(all, "panic") {
					t.Fatalf("exit %d (%v), want 1 without a stack trace:\n%s", code, err, all)
				}
				if cname == "doctor" {
					if !strings.Contains(stdout.String(), "fail  data file  "+want) {
						t.Fatalf("doctor does not report the damage:\n%s", all)
					}
					return
				}
				lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
				if len(lines) != 1 || !strings.HasSuffix(lines[0], want) {
					t.Fatalf("stderr %q, want one line ending %q", stderr.String(), want)
				}
			})
		}
	}
}

// The doctor checks the data file as every command's open does: fine, damaged (see above),
// or held by a running daemon, which checked it when it started.
func TestDoctorChecksTheDataFile(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, "data_dir: "+data+"\nservice: {addr: \"off\"}\nsession: {fallback: true}\n")
	path := filepath.Join(data, "tunebot.db")
	if code, stdout, _ := runCmd("doctor", "--config", cfg); code != 0 || !strings.Contains(stdout, "ok    data file  "+path+" does not exist yet") {
		t.Fatalf("no data file: exit %d\n%s", code, stdout)
	}
	storeWithSessions(t, data, 2)
	if code, stdout, _ := runCmd("doctor", "--config", cfg); code != 0 || !strings.Contains(stdout, "ok    data file  "+path+" passed its consistency check") {
		t.Fatalf("sound data file: exit %d\n%s", code, stdout)
	}
	db, err := openStore(config.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if code, stdout, _ := runCmd("doctor", "--config", cfg); code != 0 || !strings.Contains(stdout, "warn  data file  "+path+" is in use by a running tunebot") {
		t.Fatalf("held data file: exit %d\n%s", code, stdout)
	}
}
