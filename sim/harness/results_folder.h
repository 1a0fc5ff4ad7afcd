// A results folder has one writer, and a finished folder is replaced without ever deleting
// what has not been replaced yet.
//
//   lock:     OUT/.lockbench.lock, flock(2)'d by the one lockbench writing OUT (the kernel
//             drops the lock when that process dies, however it dies)
//   build:    PARENT/.NAME.incomplete.PID.N/   the complete new folder, beside OUT
//   publish:  renameat2(staging, OUT, RENAME_EXCHANGE)   one atomic step: OUT is the old
//             folder, then the new one (a plain no-replace rename when OUT does not exist)
//   then:     remove the staging name, which now holds the old folder
//
// A process killed at any step leaves OUT old and complete or new and complete; whatever it
// leaves under the staging name is never the only complete copy, so the next writer of OUT
// removes it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockbench {

// The lock file's name inside a results folder.
inline constexpr const char* kLockFileName = ".lockbench.lock";

// The lock on one results folder, held until destroyed (or, across execv, for the life of
// the program execv'd: see keep_across_exec).
class FolderLock {
public:
    // Takes DIR's lock, making DIR first if `create`. Throws one line naming DIR and the pid
    // of the lockbench that holds it when another does. A folder not to be made that this
    // process may not write is left unlocked.
    FolderLock(const std::filesystem::path& dir, bool create);
    // Removes DIR (and the folders made above it) when this lock made it and it holds nothing
    // else, or else the lock file when this lock made it.
    ~FolderLock();
    FolderLock(FolderLock&& other) noexcept;
    FolderLock& operator=(FolderLock&&) = delete;
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;

    // Lets a program this process execv's inherit the lock.
    void keep_across_exec();

private:
    std::filesystem::path dir_;
    std::filesystem::path made_top_;  // the topmost folder it made, when it made DIR
    int fd_ = -1;
    bool made_dir_ = false;
    bool made_file_ = false;          // the lock file was not there before
};

// The locks for writing OUT (made if missing) and reading `inputs` (only those that exist;
// one lock per folder, whichever path names it). Throws on the first folder in use.
std::vector<FolderLock> lock_folders(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs,
                                     bool create_out = true);

// True if DIR holds nothing but possibly its lock file.
bool empty_but_for_lock(const std::filesystem::path& dir);

// A fresh, empty staging folder beside `out`, to build its replacement in. Leftovers of
// earlier writers of `out` are removed first: the caller holds the lock of `out` or of a
// folder above it, so no live writer owns them, and none is the only complete copy.
std::filesystem::path make_staging(const std::filesystem::path& out);

// Puts the complete folder `staging` in place as `out` in one atomic step (carrying `out`'s
// lock file over), then removes what was there.
void replace_folder(const std::filesystem::path& staging, const std::filesystem::path& out);

// A name for a temporary file beside `file`, unique to this process and call.
std::filesystem::path unique_temp_path(const std::filesystem::path& file);

// Test-only: when $LOCKBENCH_TEST_EXIT_AT equals `step`, the process _exits at once (status
// 86), as a SIGKILL at that instant would leave it; tests use this to stop a writer at
// each step of publishing. Unset, it does nothing.
void test_exit_point(const char* step);

// Writes `text` to `path` through a temporary file (a name no other writer uses) and a
// rename: readers see the old file or the whole new one, never half of it.
void write_atomically(const std::filesystem::path& path, const std::string& text);

// A JSON file; throws one line naming it if it cannot be read or parsed.
nlohmann::json read_json_file(const std::filesystem::path& file);

}  // namespace lockbench
