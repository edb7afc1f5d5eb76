// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wbstatus: a write-back failure is told once to the next fsync and once
 * to the next close of its container; files given up are listed.
 */
#include "wbstatus.h"

#include "check.h"

#include <errno.h>

static void test_told_once_to_each_kind(void)
{
	struct wbstatus *s = wbstatus_new();

	CHECK_INT(wbstatus_take(s, "a", true), 0);
	wbstatus_failed(s, "a", -EROFS);
	CHECK_INT(wbstatus_take(s, "b", true), 0); /* another container */
	CHECK_INT(wbstatus_take(s, "a", true), -EROFS);
	CHECK_INT(wbstatus_take(s, "a", true), 0);
	CHECK_INT(wbstatus_take(s, "a", false), -EROFS);
	CHECK_INT(wbstatus_take(s, "a", false), 0);
	/* a new failure arms both again; a non-errno becomes EIO */
	wbstatus_failed(s, "a", 7);
	CHECK_INT(wbstatus_take(s, NULL, false), -EIO); /* any container */
	CHECK_INT(wbstatus_take(s, "a", true), -EIO);
	wbstatus_free(s);
}

static void test_given_up_files_are_listed(void)
{
	struct wbstatus *s = wbstatus_new();
	char buf[256];
	size_t len = 0;

	buf[0] = '\0';
	CHECK(!wbstatus_lines(s, buf, &len, sizeof(buf)));
	CHECK_INT(len, 0);
	wbstatus_gave_up(s, "web", "/a\tb", "Read-only file system",
			 "/var/tmp/ctrfs-rescue/web/a\tb");
	wbstatus_gave_up(s, "web", "/c", "Input/output error", NULL);
	CHECK(wbstatus_lines(s, buf, &len, sizeof(buf)));
	CHECK(strcmp(buf, "failed\tweb\t/a b\tRead-only file system\t"
			  "/var/tmp/ctrfs-rescue/web/a b\n"
			  "failed\tweb\t/c\tInput/output error\t-\n") == 0);
	CHECK_INT(len, strlen(buf));
	wbstatus_free(s);
}

int main(void)
{
	test_told_once_to_each_kind();
	test_given_up_files_are_listed();
	return check_report();
}
