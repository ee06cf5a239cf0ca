// n5.h compiles as C++11 with -Wall -Wextra -Wpedantic -Werror, its
// functions link with C linkage (extern "C"), and a C++ program can drive
// the library with std containers as buffers.
#include <n5.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

static int failures = 0;

static void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s: %s\n", what, n5_last_error_message());
        failures++;
    }
}

int main()
{
    check(n5_version_number() == N5_VERSION_NUMBER, "n5_version_number() == N5_VERSION_NUMBER");
    check(std::string(n5_version_string()) == N5_VERSION_STRING, "N5_VERSION_STRING");

    char tmpl[] = "/tmp/n5-cxx-XXXXXX";
    const char *dir = mkdtemp(tmpl);
    check(dir != nullptr, "mkdtemp");
    const std::string root = std::string(dir) + "/c.n5";

    n5_container *c = n5_container_open(root.c_str(), N5_MODE_CREATE, nullptr);
    check(c != nullptr, "n5_container_open");
    const std::vector<uint64_t> dims = {10, 6}, block = {4, 4};
    n5_dataset *d = n5_dataset_create(c, "a/b", dims.size(), dims.data(), block.data(),
                                      N5_DTYPE_FLOAT32, "{\"type\":\"zstd\"}");
    check(d != nullptr, "n5_dataset_create");

    std::vector<float> data(10 * 6);
    for (size_t i = 0; i < data.size(); i++)
        data[i] = static_cast<float>(i) * 0.5f;
    const std::vector<uint64_t> zero = {0, 0};
    check(n5_region_write(d, 2, zero.data(), dims.data(), N5_DTYPE_FLOAT32, data.data(),
                          data.size() * sizeof(float)) == N5_OK,
          "n5_region_write");
    std::vector<float> back(data.size());
    check(n5_region_read(d, 2, zero.data(), dims.data(), N5_DTYPE_FLOAT32, back.data(),
                         back.size() * sizeof(float)) == N5_OK,
          "n5_region_read");
    check(back == data, "the region reads back");

    size_t len = 0;
    check(n5_list(c, "a", nullptr, 0, &len) == N5_OK, "n5_list size query");
    std::string list(len, '\0');
    check(n5_list(c, "a", &list[0], len + 1, &len) == N5_OK, "n5_list");
    check(list == "[\"b\"]", "n5_list text");

    n5_dataset_free(d);
    n5_container_free(c);
    check(n5_remove(nullptr, "x") == N5_ERR_NULL_POINTER, "NULL handle");

    const std::string rm = "rm -rf '" + std::string(dir) + "'";
    check(std::system(rm.c_str()) == 0, "cleanup");
    if (failures == 0)
        std::printf("n5.h as C++11: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
