// One writer per results folder, and publishing by exchange; see results_folder.h.
#include "sim/harness/results_folder.h"

#include "analysis/history_io.h"  // open_results_file

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <utility>

namespace fs = std::filesystem;

namespace lockbench {
namespace {

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// The pid a lock file names (its holder writes it there), or "?".
std::string holder_of(int fd) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text.empty() || text.find_first_not_of("0123456789") != std::string::npos ? "?" : text;
}

bool same_file(int fd, const fs::path& path) {
    struct stat a {}, b {};
    return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// OUT as the folder to switch: absolute, symbolic links resolved, no trailing slash.
fs::path published_path(const fs::path& out) {
    fs::path p = fs::weakly_canonical(fs::absolute(out));
    if (!p.has_filename()) p = p.parent_path();
    return p;
}

std::string next_suffix() {
    static std::atomic<int> counter{0};
    return std::to_string(::getpid()) + "." + std::to_string(counter++);
}

std::string staging_prefix(const std::string& name) { return "." + name + ".incomplete."; }
std::string replaced_prefix(const std::string& name) { return "." + name + ".replaced."; }

// Where a filesystem cannot exchange (NFS, some FUSE), the switch takes two renames: OUT
// aside, the new folder in. Nothing is deleted before the new folder is in place; a process
// killed between the two leaves the old folder under the ".replaced." name, which the next
// writer puts back (restore_or_clean).
void replace_in_two_steps(const fs::path& staging, const fs::path& target) {
    const fs::path aside = target.parent_path() / (replaced_prefix(target.filename().string()) + next_suffix());
    fs::rename(target, aside);
    fs::rename(staging, target);
    fs::remove_all(aside);
}

// Puts `aside`, the old complete folder a two-step switch left, back at `target`. `target`
// may exist, made empty but for the lock file this writer holds: the lock is carried along
// (a hard link into `aside` first), so it holds across the switch.
void put_back(const fs::path& aside, const fs::path& target) {
    if (fs::exists(target)) {
        fs::remove(aside / kLockFileName);
        fs::create_hard_link(target / kLockFileName, aside / kLockFileName);
        fs::remove(target / kLockFileName);
        fs::remove(target);
    }
    fs::rename(aside, target);
}

// What earlier writers of `target` left beside it: a folder set aside by a two-step switch
// goes back if `target` is missing or empty but for its lock (it is then the only complete
// copy); anything else is removed.
void restore_or_clean(const fs::path& target) {
    const std::string name = target.filename().string();
    std::vector<fs::path> staged, aside;
    for (const auto& e : fs::directory_iterator(target.parent_path())) {
        const std::string n = e.path().filename().string();
        if (n.starts_with(staging_prefix(name))) staged.push_back(e.path());
        if (n.starts_with(replaced_prefix(name))) aside.push_back(e.path());
    }
    if (!aside.empty() && (!fs::exists(target) || empty_but_for_lock(target))) {
        put_back(aside.back(), target);
        aside.pop_back();
    }
    for (const auto& p : staged) fs::remove_all(p);
    for (const auto& p : aside) fs::remove_all(p);
}

}  // namespace

FolderLock::FolderLock(const fs::path& dir, bool create) : dir_(dir) {
    if (create && !fs::exists(dir)) {
        // The topmost folder this makes ("a" of a/b/c when none exists): it goes again if unused.
        fs::path top = dir;
        while (top.has_parent_path() && top.parent_path() != top && !fs::exists(top.parent_path()))
            top = top.parent_path();
        made_dir_ = fs::create_directories(dir);
        if (made_dir_) made_top_ = top;
    }
    if (fs::exists(dir) && !fs::is_directory(dir))
        throw std::runtime_error(dir.string() + ": exists and is not a folder; choose another");
    const fs::path file = dir / kLockFileName;
    for (;;) {
        fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        made_file_ = fd_ >= 0;
        if (fd_ < 0 && errno == EEXIST) fd_ = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
        // A folder only read (a shard to merge) on storage we may not write: no lockbench of
        // ours can write it either, so there is nothing to exclude.
        if (fd_ < 0 && !create && (errno == EACCES || errno == EROFS)) return;
        if (fd_ < 0) throw std::runtime_error(system_error(dir.string() + ": cannot open its lock file " + kLockFileName));
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            const std::string holder = holder_of(fd_);
            ::close(fd_);
            fd_ = -1;
            throw std::runtime_error(dir.string() + ": in use by another lockbench (pid " + holder +
                                     "); wait until it ends, or choose another folder");
        }
        // The holder before us may have removed the file between our open and our flock: a
        // lock counts only on the file the name still points to.
        if (same_file(fd_, file)) break;
        ::close(fd_);
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
        // The pid is only for the message a second writer gets; the lock holds without it.
    }
}

FolderLock::FolderLock(FolderLock&& other) noexcept
    : dir_(std::move(other.dir_)),
      made_top_(std::move(other.made_top_)),
      fd_(std::exchange(other.fd_, -1)),
      made_dir_(other.made_dir_),
      made_file_(other.made_file_) {}

FolderLock::~FolderLock() {
    if (fd_ < 0) return;
    std::error_code ec;
    // A folder this lock made for a writer that then wrote nothing goes again, as if never made,
    // with the folders made above it; a lock file it made in a folder that was there goes too
    // (a refused command leaves no trace). Removed while still locked, and only the file the
    // name still points to: a lockbench that opened it meanwhile finds the name gone after its
    // flock, and makes a new one (the constructor's same_file).
    const fs::path file = dir_ / kLockFileName;
    if (made_dir_ && empty_but_for_lock(dir_)) {
        fs::remove(file, ec);
        for (fs::path d = dir_; fs::remove(d, ec) && d != made_top_ && d.has_parent_path(); d = d.parent_path()) {
        }
    } else if (made_file_ && same_file(fd_, file)) {
        fs::remove(file, ec);
    }
    ::close(fd_);
}

void FolderLock::keep_across_exec() {
    if (fd_ >= 0) ::fcntl(fd_, F_SETFD, 0);
}

std::vector<FolderLock> lock_folders(const fs::path& out, const std::vector<fs::path>& inputs, bool create_out) {
    std::vector<FolderLock> locks;
    std::vector<fs::path> locked;
    const auto lock = [&](const fs::path& dir, bool create) {
        std::error_code ec;
        if (!create && !fs::is_directory(dir)) return;  // the command says what is wrong with it
        for (const auto& l : locked)
            if (fs::equivalent(l, dir, ec)) return;     // one lock per folder: a second would refuse us
        locks.emplace_back(dir, create);
        locked.push_back(dir);
    };
    lock(out, create_out);
    for (const auto& in : inputs) lock(in, false);
    return locks;
}

bool empty_but_for_lock(const fs::path& dir) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().filename() != kLockFileName) return false;
    return !ec;
}

fs::path make_staging(const fs::path& out) {
    const fs::path target = published_path(out);
    fs::create_directories(target.parent_path());
    restore_or_clean(target);
    const fs::path staging = target.parent_path() / (staging_prefix(target.filename().string()) + next_suffix());
    fs::create_directory(staging);
    return staging;
}

void replace_folder(const fs::path& staging, const fs::path& out) {
    const fs::path target = published_path(out);
    // The lock file is the same file in the new folder, so that the lock keeps holding.
    if (fs::exists(target / kLockFileName) && !fs::exists(staging / kLockFileName))
        fs::create_hard_link(target / kLockFileName, staging / kLockFileName);
    test_exit_point("publish-1");
    if (!fs::exists(target)) {
        fs::rename(staging, target);
        test_exit_point("publish-3");
        return;
    }
    if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
        if (errno != EINVAL && errno != ENOSYS)
            throw std::runtime_error(system_error(target.string() + ": cannot put the new results in place"));
        replace_in_two_steps(staging, target);
        return;
    }
    test_exit_point("publish-2");
    fs::remove_all(staging);  // the old folder, now under the staging name
    test_exit_point("publish-3");
}

fs::path unique_temp_path(const fs::path& file) {
    return file.parent_path() / ("." + file.filename().string() + ".tmp." + next_suffix());
}

void test_exit_point(const char* step) {
    const char* at = std::getenv("LOCKBENCH_TEST_EXIT_AT");
    if (at && std::strcmp(at, step) == 0) ::_exit(86);
}

void write_atomically(const fs::path& path, const std::string& text) {
    const fs::path tmp = unique_temp_path(path);  // a name no other writer uses
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << text;
        if (!out.flush()) {
            std::error_code ec;
            fs::remove(tmp, ec);
            throw std::runtime_error(path.string() + ": cannot write");
        }
    }
    fs::rename(tmp, path);
}

nlohmann::json read_json_file(const std::filesystem::path& file) {
    std::ifstream in = open_results_file(file);
    if (!in) throw std::runtime_error(file.string() + ": cannot read");
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) throw std::runtime_error(file.string() + ": not valid JSON");
    return j;
}

}  // namespace lockbench
