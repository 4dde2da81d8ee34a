package trainer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// A job's program is argv[0] of its template. One that cannot be started fails the trial
// at once, and a person must learn from that failure (and from doctor, before any session)
// which path was tried and why it did not start, not only its base name.

// ProgramProblems names each template (train, evaluate) whose program, {python} and
// {tunebot} filled in, cannot be started from the working directory, with the path tried.
// A program that still holds another placeholder is known only when a job starts, and is
// left out; so is {tunebot} when this process's executable cannot be found.
func (t Templates) ProgramProblems() []string {
	vals := map[string]string{"python": t.Python, "tunebot": t.Tunebot}
	if vals["tunebot"] == "" {
		vals["tunebot"], _ = os.Executable()
	}
	var probs []string
	for _, tpl := range []struct {
		name string
		argv []string
	}{{"train", t.Train}, {"evaluate", t.Evaluate}} {
		if len(tpl.argv) == 0 {
			continue // said by Check
		}
		prog := expand(tpl.argv[:1], vals)[0]
		if placeholderRE.MatchString(prog) || prog == "" {
			continue
		}
		from := ""
		if tpl.argv[0] == "{python}" {
			from = " ({python}, trainer.python)"
		}
		if why := programProblem(prog, t.Workdir, from); why != "" {
			probs = append(probs, tpl.name+": "+why)
		}
	}
	return probs
}

// programProblem says why prog, a job's argv[0], cannot be started from workdir ("" when
// it looks startable): a bare name is looked up on PATH, as the job's start looks it up; a
// path with a slash is taken against workdir, as the job starts there. from, after the
// program's name, says where it came from when the template does not name it itself.
func programProblem(prog, workdir, from string) string {
	if why := workdirProblem(workdir); why != "" {
		return why // the job's start fails on it first, whatever prog is
	}
	if !strings.ContainsRune(prog, '/') {
		if _, err := exec.LookPath(prog); err != nil {
			return fmt.Sprintf("the trainer executable %q%s was not found on PATH", prog, from)
		}
		return ""
	}
	path := inWorkdir(prog, workdir)
	what := fmt.Sprintf("the trainer executable %q%s", path, from)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return what + " does not exist"
	case err != nil:
		return what + " cannot be read: " + startReason(err)
	case st.IsDir():
		return what + " is a directory"
	case st.Mode()&0o111 == 0:
		return fmt.Sprintf("%s is not executable (mode %s)", what, st.Mode().Perm())
	}
	return ""
}

// workdirProblem says why a job cannot start in workdir ("" when it can, or when jobs
// start in tunebot's own): the start would fail with a bare "no such file or directory",
// which reads as the program's fault.
func workdirProblem(workdir string) string {
	if workdir == "" {
		return ""
	}
	st, err := os.Stat(workdir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("the working directory %q (trainer.workdir) does not exist", workdir)
	case err != nil:
		return fmt.Sprintf("the working directory %q (trainer.workdir) cannot be read: %s", workdir, startReason(err))
	case !st.IsDir():
		return fmt.Sprintf("the working directory %q (trainer.workdir) is not a directory", workdir)
	}
	return ""
}

// startFailure is why a job whose program would not start failed: what programProblem
// finds, else the start's own error with the program's path.
func startFailure(prog, workdir string, err error) string {
	if why := programProblem(prog, workdir, ""); why != "" {
		return why
	}
	why := fmt.Sprintf("the trainer executable %q could not be started: %s", inWorkdir(prog, workdir), startReason(err))
	if errors.Is(err, syscall.ENOENT) {
		// The file is there, so what execve did not find is the interpreter it names.
		why += " (a script whose #! interpreter is missing?)"
	}
	return why
}

// inWorkdir is where a job started in workdir finds prog: a relative path with a slash is
// taken against workdir; a bare name (looked up on PATH) and an absolute path are as given.
func inWorkdir(prog, workdir string) string {
	if !strings.ContainsRune(prog, '/') || filepath.IsAbs(prog) || workdir == "" {
		return prog
	}
	return filepath.Join(workdir, prog)
}
