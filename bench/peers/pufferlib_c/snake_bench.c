/* The project's timing harness for PufferLib's C Snake (its snake.h, from the pufferlib 3.0.0 sdist).
 *
 * What PufferLib's own test_performance (pufferlib/ocean/snake/snake.py) times, in C alone: the worlds
 * of its Snake() at their defaults (16 worlds of a 640x360 map, 256 snakes and 4096 food each, vision 5,
 * corpses left) stepped in turn, random actions taken from a cache of 1024 steps drawn before the clock
 * starts. After every step each world's observations and rewards are read into a checksum, as jaxrl's
 * harness consumes its own (bench/parts/arena.py), so no compiler can leave their writing out.
 *
 *     snake_bench SECONDS [SEED]
 *
 * prints one line, "PufferLib C Snake, ...: RATE snake-steps/s (...)", RATE counting every snake's move.
 * bench/peers/pufferlib_snake.py builds it (cc -O3 -march=native, this folder and snake.h's on the
 * include path: raylib.h here stands in for the window library) and runs one process per core at once.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "snake.h"

#define NUM_WORLDS 16
#define MAP_WIDTH 640
#define MAP_HEIGHT 360
#define SNAKES_PER_WORLD 256
#define FOOD_PER_WORLD 4096
#define VISION 5
#define MAX_SNAKE_LENGTH 1024 /* PufferLib's default, below the map's area */
#define ACTION_CACHE 1024

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One world at PufferLib's defaults, reset from its own seed (PufferLib seeds each world before its reset). */
static void start_world(CSnake* env, unsigned seed) {
    memset(env, 0, sizeof(*env));
    env->num_snakes = SNAKES_PER_WORLD;
    env->width = MAP_WIDTH;
    env->height = MAP_HEIGHT;
    env->food = FOOD_PER_WORLD;
    env->vision = VISION;
    env->leave_corpse_on_death = 1;
    env->reward_food = 0.1f;
    env->reward_corpse = 0.1f;
    env->reward_death = -1.0f;
    env->max_snake_length = MAX_SNAKE_LENGTH;
    env->cell_size = 1;
    allocate_csnake(env);
    srand(seed);
    c_reset(env);
}

/* Every byte of a world's observations and its rewards, summed. */
static void read_world(const CSnake* env, uint64_t* seen, double* rewards) {
    const unsigned char* obs = (const unsigned char*)env->observations;
    uint64_t sum = 0;
    for (size_t i = 0, n = (size_t)env->num_snakes * env->obs_size; i < n; i++) sum += obs[i];
    float reward = 0.0f;
    for (int i = 0; i < env->num_snakes; i++) reward += env->rewards[i];
    *seen += sum;
    *rewards += reward;
}

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3 || atof(argv[1]) <= 0) {
        fprintf(stderr, "usage: %s SECONDS [SEED]  (SECONDS > 0: how long to step)\n", argv[0]);
        return 2;
    }
    double seconds = atof(argv[1]);
    unsigned seed = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 0;

    static CSnake worlds[NUM_WORLDS];
    for (int w = 0; w < NUM_WORLDS; w++) start_world(&worlds[w], seed * NUM_WORLDS + (unsigned)w);

    size_t per_step = (size_t)NUM_WORLDS * SNAKES_PER_WORLD;
    int* actions = malloc(ACTION_CACHE * per_step * sizeof(int));
    if (actions == NULL) {
        fprintf(stderr, "snake_bench: no memory for the action cache\n");
        return 1;
    }
    for (size_t i = 0; i < ACTION_CACHE * per_step; i++) actions[i] = rand() % 4;

    uint64_t steps = 0, seen = 0;
    double rewards = 0.0, start = seconds_now(), elapsed;
    do {
        const int* row = actions + (steps % ACTION_CACHE) * per_step;
        for (int w = 0; w < NUM_WORLDS; w++) {
            memcpy(worlds[w].actions, row + (size_t)w * SNAKES_PER_WORLD, SNAKES_PER_WORLD * sizeof(int));
            c_step(&worlds[w]);
            read_world(&worlds[w], &seen, &rewards);
        }
        steps++;
        elapsed = seconds_now() - start;
    } while (elapsed < seconds);

    printf("PufferLib C Snake, %d worlds of %dx%d with %d snakes each: %.0f snake-steps/s"
           " (%llu steps in %.3f s; observations read %llu, rewards %.1f)\n",
           NUM_WORLDS, MAP_WIDTH, MAP_HEIGHT, SNAKES_PER_WORLD, (double)(steps * per_step) / elapsed,
           (unsigned long long)steps, elapsed, (unsigned long long)seen, rewards);
    for (int w = 0; w < NUM_WORLDS; w++) free_csnake(&worlds[w]);
    free(actions);
    return 0;
}
