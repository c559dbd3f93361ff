/*
 * Replays a fuzz target's committed corpus through its libFuzzer entry
 * point, so `make test` exercises every parser on hostile input without a
 * fuzzing runtime.  Usage: replay_fuzz_X DIR (every file of DIR).  A crash
 * aborts the run (and the sanitizer build reports it); the last line says
 * "N passed, N failed, N skipped" (nothing is skipped: the line has the
 * form of every suite's, which `make test` adds up).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	struct dirent **names;
	int n, passed = 0, failed = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	n = scandir(argv[1], &names, NULL, alphasort);
	if (n < 0) {
		perror(argv[1]);
		printf("0 passed, 1 failed, 0 skipped\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		FILE *f;
		uint8_t *buf;

		snprintf(path, sizeof(path), "%s/%s", argv[1], names[i]->d_name);
		free(names[i]);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		f = fopen(path, "rb");
		buf = malloc((size_t)st.st_size + 1);
		if (!f || !buf || fread(buf, 1, (size_t)st.st_size, f) !=
				  (size_t)st.st_size) {
			fprintf(stderr, "cannot read '%s'\n", path);
			failed++;
		} else {
			LLVMFuzzerTestOneInput(buf, (size_t)st.st_size);
			passed++;
		}
		if (f)
			fclose(f);
		free(buf);
	}
	free(names);
	printf("%d passed, %d failed, 0 skipped\n", passed, failed);
	return failed ? 1 : 0;
}
