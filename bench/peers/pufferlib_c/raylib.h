/* Stands in for raylib when PufferLib's snake.h is built to be timed: snake.h includes raylib.h for its
 * render client (c_render), which the timing harness never calls. Only the names snake.h uses are here,
 * each doing nothing, so that no window library is needed to compile it. The project's own file. */
#ifndef JAXRL_RAYLIB_STUB_H
#define JAXRL_RAYLIB_STUB_H

#include <stdbool.h>

typedef struct Color {
    unsigned char r, g, b, a;
} Color;

#define KEY_ESCAPE 256

static inline void InitWindow(int width, int height, const char* title) { (void)width, (void)height, (void)title; }
static inline void SetTargetFPS(int fps) { (void)fps; }
static inline void CloseWindow(void) {}
static inline bool IsKeyDown(int key) { return (void)key, false; }
static inline void BeginDrawing(void) {}
static inline void EndDrawing(void) {}
static inline void ClearBackground(Color color) { (void)color; }
static inline void DrawRectangle(int x, int y, int width, int height, Color color) {
    (void)x, (void)y, (void)width, (void)height, (void)color;
}

#endif
